#!/usr/bin/env bash
# The streaming CPU kernels keep their software prefetches in the compiled code.
# GCC takes a helper function that only prefetches for one without effect and,
# where it does not inline it early, deletes its calls: the AVX-512 W4A4 kernels
# ran without a prefetch for that reason until 2026-12-07 (docs/benchmarks.md,
# "The AVX-512 W4A4 kernels did not prefetch"), and no output-checking test can
# see it. This disassembles the engine library and asks every kernel below for
# at least one prefetch instruction. A kernel that is renamed or inlined away
# fails here by name: update the list with the kernel that now carries the loop.
#
# Usage: kernels_prefetch_test.sh OBJDUMP LIBNINFER_ENGINE
set -euo pipefail
objdump_bin="$1"
lib="$2"

# Demangled function names (without "(anonymous namespace)::" and arguments):
# the one-row (decode) kernel of each weight kind and instruction set, or the
# function GCC inlines it into.
kernels=(
  "void ninfer::cpu::w4a4_lanes_rows<1>"          # AVX-512 lane kernel (VNNI and VBMI builds)
  "ninfer::cpu::w4a4_4x1"                         # AVX-512 4 x 1 W4A4 (its rows<1..4> inlined)
  "ninfer::cpu::w4a4"                             # AVX2 4 x 1 W4A4 (rows<1..3> inlined)
  "ninfer::cpu::w4a16"                            # AVX-512 and AVX2 W4A16 (rows<1..4> inlined)
  "ninfer::cpu::nvfp4_w4a4_blocked_avx2"          # AVX2 blocked W4A4
  "void ninfer::cpu::row1<ninfer::cpu::WBf16>"    # dense one-row GEMVs (AVX2, AVX-512)
  "void ninfer::cpu::row1<ninfer::cpu::WF16>"
  "void ninfer::cpu::row1<ninfer::cpu::WF32>"
)

# One line per function in the library: its prefetch count, a tab, its name.
listing="$("$objdump_bin" -d -C --no-show-raw-insn "$lib" | awk '
  function flush() { if (name != "") print count "\t" name }
  /^[0-9a-f]+ <.*>:$/ {
    flush()
    name = $0
    sub(/^[0-9a-f]+ </, "", name)
    gsub(/\(anonymous namespace\)::/, "", name)
    sub(/\(.*$/, "", name)
    count = 0
    next
  }
  /prefetch/ { count++ }
  END { flush() }')"

status=0
for k in "${kernels[@]}"; do
  # Every copy of the kernel (one per instruction set that defines it) must prefetch.
  copies="$(printf '%s\n' "$listing" | awk -F'\t' -v k="$k" '$2 == k')"
  if [[ -z "$copies" ]]; then
    echo "FAIL: no function '$k' in $lib (renamed or inlined: update tests/backend/kernels_prefetch_test.sh)"
    status=1
    continue
  fi
  while IFS=$'\t' read -r count name; do
    if [[ "$count" -eq 0 ]]; then
      echo "FAIL: '$name' has no prefetch instruction"
      status=1
    else
      echo "ok: '$name' ($count prefetch instructions)"
    fi
  done <<< "$copies"
done
exit "$status"
