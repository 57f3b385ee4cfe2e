#!/usr/bin/env bash
# Builds the libFuzzer targets of tests/fuzz (preset `fuzz`: clang-19, ASan + UBSan, build-fuzz/) and runs each for
# SECONDS (default 20) from its committed seed corpus and kept crash inputs; new inputs go to build-fuzz/corpus/,
# crashes to build-fuzz/crashes/<target>/. Exits 1 if any target crashed. docs/security.md, "Fuzzing".
#   scripts/fuzz.sh [SECONDS]     NINFER_FUZZ_TARGETS="tokenizer artifact" picks targets; NINFER_FUZZ_JOBS=N runs N
#                                 processes per target (libFuzzer -fork); NINFER_BUILD_LOCK=FILE builds under flock.
set -euo pipefail
cd "$(dirname "$0")/.."
secs="${1:-20}"
read -r -a targets <<< "${NINFER_FUZZ_TARGETS:-$(tr '\n' ' ' < tests/fuzz/targets.txt)}"  # default: every target

# clang-19 with its compiler-rt (libFuzzer and the sanitizer runtimes), from Debian.
probe=$(mktemp -d)
printf '#include <cstddef>\n#include <cstdint>\nextern "C" int LLVMFuzzerTestOneInput(const uint8_t*, size_t) { return 0; }\n' > "$probe/p.cpp"
if ! clang++-19 -fsanitize=fuzzer,address,undefined "$probe/p.cpp" -o "$probe/p" >/dev/null 2>&1; then
  echo "== installing clang-19 and libclang-rt-19-dev"
  sudo=""; [ "$(id -u)" = 0 ] || sudo=sudo
  $sudo apt-get install -y --no-install-recommends clang-19 libclang-rt-19-dev >/dev/null
fi
rm -rf "$probe"

echo "== configure + build (preset fuzz)"
lock=()
[ -n "${NINFER_BUILD_LOCK:-}" ] && lock=(flock "$NINFER_BUILD_LOCK")
cmake --preset fuzz >/dev/null
"${lock[@]}" cmake --build build-fuzz -j "${NINFER_JOBS:-$(nproc)}" --target fuzz_targets

# The targets that parse from a path write their input to a scratch file in $TMPDIR; keep a killed run's file here.
mkdir -p build-fuzz/tmp
export TMPDIR="$PWD/build-fuzz/tmp"

failed=()
for t in "${targets[@]}"; do
  bin=build-fuzz/tests/fuzz/fuzz_$t
  work=build-fuzz/corpus/$t
  crashes=build-fuzz/crashes/$t
  mkdir -p "$work" "$crashes"
  inputs=("$work" tests/fuzz/corpus/$t)
  [ -d tests/fuzz/regressions/$t ] && inputs+=(tests/fuzz/regressions/$t)
  fork=()
  [ -n "${NINFER_FUZZ_JOBS:-}" ] && fork=(-fork="$NINFER_FUZZ_JOBS" -ignore_crashes=0)
  echo "== fuzz_$t for ${secs}s"
  if "$bin" "${fork[@]}" -max_total_time="$secs" -timeout=10 -rss_limit_mb=4096 -max_len=65536 -print_final_stats=1 \
       -artifact_prefix="$crashes/" "${inputs[@]}" > "build-fuzz/fuzz_$t.log" 2>&1; then
    grep -E "^stat::number_of_executed_units|^stat::peak_rss_mb|cov: " "build-fuzz/fuzz_$t.log" | tail -3 | tr '\n' ' '; echo
  else
    echo "fuzz_$t FAILED (log: build-fuzz/fuzz_$t.log, inputs: $crashes/)"
    grep -E "ERROR|invariant|SUMMARY|Test unit written" "build-fuzz/fuzz_$t.log" | head -5 || true
    failed+=("$t")
  fi
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz targets that failed: ${failed[*]}"; exit 1
fi
echo "== every fuzz target ran ${secs}s without a finding"
