#!/usr/bin/env bash
# The GPU check: one prepared run on a GPU machine, <= 9 minutes on an H200 (docs/gpu.md).
#
#   tests/gpu/check.sh RESULTS_DIR        from a checkout, with the bundle in build-gpu-bundle/ (or NINFER_GPU_BUNDLE)
#   BUNDLE/check.sh RESULTS_DIR           from a bundle copied anywhere (scripts/gpu-bundle.sh [--with-data])
#
# Steps, each under `timeout` and all under one deadline (NINFER_GPU_BUDGET_S, default 530 s), never stopping at a
# failure: nvidia-smi; the device probe; the CUDA op suite (tests/cuda, all but CudaE2E*) of the sm_90 build and of
# the sm_70 build (compute_70 PTX JIT-compiled by the driver: reported when the driver refuses it); the e2e tests
# (CudaE2E*) of both builds; compute-sanitizer memcheck on a small subset (NINFER_GPU_MEMCHECK_FILTER, default
# *Small*); a short op benchmark (ninfer-bench-cuda, NINFER_GPU_BENCH_ARGS) when the bundle has one; NCCL across two
# GPUs (*MultiGpu*) only where two are listed.
# Writes RESULTS_DIR/summary.md, summary.json and one log per step. A step passes only when it ran, exited 0 and
# (for a test binary) ran tests with none failed or skipped: on a GPU machine a skipped GPU test is a problem.
# Exit status: 0 when every step passed, 1 otherwise.
set -uo pipefail

results="${1:-}"
[ -n "$results" ] || { sed -n '2,15p' "$0" >&2; exit 2; }
mkdir -p "$results" || exit 2
results="$(cd "$results" && pwd)"
here="$(cd "$(dirname "$0")" && pwd)"
t0=$SECONDS
budget="${NINFER_GPU_BUDGET_S:-530}"
notes=()      # setup notes for the summary
note() { notes+=("$*"); echo "check: $*"; }

# ---- the bundle -----------------------------------------------------------------------------------------------
if [ -n "${NINFER_GPU_BUNDLE:-}" ]; then bundle="$NINFER_GPU_BUNDLE"
elif [ -f "$here/manifest.env" ]; then bundle="$here"
else bundle="$here/../../build-gpu-bundle"; fi
bundle="$(cd "$bundle" 2>/dev/null && pwd || echo "$bundle")"
NINFER_BUNDLE_SOURCE_ROOT=""; NINFER_BUNDLE_REVISION="none"; NINFER_BUNDLE_CREATED=""; NINFER_BUNDLE_MISSING=""
NINFER_BUNDLE_BINARIES=""
if [ -f "$bundle/manifest.env" ]; then
  # shellcheck source=/dev/null
  . "$bundle/manifest.env"
  note "bundle $bundle, revision $NINFER_BUNDLE_REVISION, built $NINFER_BUNDLE_CREATED"
  [ -z "$NINFER_BUNDLE_MISSING" ] || note "bundle lacks: $NINFER_BUNDLE_MISSING"
else
  note "PROBLEM: no bundle at $bundle (scripts/gpu-bundle.sh build-gpu-bundle, or set NINFER_GPU_BUNDLE)"
fi
work="${NINFER_GPU_WORK:-${TMPDIR:-/tmp}/ninfer-gpu-check.$$}"
mkdir -p "$work"
payload="$bundle"
if [ -f "$bundle/payload.tar.xz" ]; then
  payload="$work/payload"
  mkdir -p "$payload"
  if tar -C "$payload" -xJf "$bundle/payload.tar.xz" 2>"$work/untar.err" ||
     python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' \
       "$bundle/payload.tar.xz" "$payload" 2>>"$work/untar.err"; then
    :
  else
    note "PROBLEM: could not unpack payload.tar.xz: $(tail -1 "$work/untar.err")"
  fi
fi
bin="$payload/bin"

# ---- test data: the binaries read it at the paths of the checkout they were built in ----------------------------
src="$NINFER_BUNDLE_SOURCE_ROOT"
if [ -n "${NINFER_GPU_DATA_ROOT:-}" ]; then data_root="$NINFER_GPU_DATA_ROOT"
elif [ -d "$bundle/data/tests/data" ]; then data_root="$bundle/data"
else data_root="$(cd "$bundle/.." 2>/dev/null && pwd || echo "$bundle/..")"; fi
has_data() { [ -d "$1/tests/data/reference" ] && [ -f "$1/models/ninfer-tiny.ninfer" ]; }
if [ -z "$src" ]; then
  :
elif has_data "$src"; then
  note "test data: the binaries' own paths under $src"
elif ! has_data "$data_root"; then
  note "PROBLEM: no test data (tests/data, models/) at $src or $data_root: copy the bundle made with --with-data, or set NINFER_GPU_DATA_ROOT"
elif [ ! -e "$src" ] && mkdir -p "$(dirname "$src")" 2>/dev/null && ln -s "$data_root" "$src" 2>/dev/null; then
  note "test data: linked $src -> $data_root (the paths compiled into the binaries)"
else
  note "PROBLEM: the binaries read $src/tests/data and $src/models, which hold no test data here, and $src could not be linked to $data_root (run as a user that may create it, or from a checkout at $src)"
fi

# ---- libraries: the bundle's, then NCCL / cuBLAS from the machine's Python wheels -----------------------------------
extra=""
if command -v python3 >/dev/null 2>&1; then
  for d in $(python3 -c 'import nvidia; print(" ".join(nvidia.__path__))' 2>/dev/null); do
    for f in $(find "$d" -maxdepth 4 \( -name 'libnccl.so.2' -o -name 'libcublas.so.*' -o -name 'libcublasLt.so.*' \) 2>/dev/null); do
      case ":$extra:" in *":$(dirname "$f"):"*) ;; *) extra="$extra:$(dirname "$f")";; esac
    done
  done
fi
export LD_LIBRARY_PATH="$payload/lib$extra${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
note "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
# A fresh JIT cache, so the sm_70 run really JIT-compiles (and is timed doing it).
export CUDA_CACHE_PATH="$work/cuda-jit-cache" CUDA_CACHE_MAXSIZE=4294967296

# ---- GPU present? ---------------------------------------------------------------------------------------------------
gpu=0
if command -v nvidia-smi >/dev/null 2>&1 && timeout 20 nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then gpu=1; fi
[ "$gpu" = 1 ] || note "no GPU on this machine (nvidia-smi lists none): every GPU step is reported skipped or failed, none passed"
gpu_line=""

# ---- steps ---------------------------------------------------------------------------------------------------------
steps=()   # records: name<TAB>status<TAB>rc<TAB>seconds<TAB>passed<TAB>failed<TAB>skipped<TAB>command<TAB>note<TAB>log
n=0
esc_md() { printf '%s' "$1" | sed 's/|/\\|/g'; }
# Fields are tab-separated and never empty ("-"): read splits on tabs, and runs of tabs would merge.
record() { local a out=""; for a; do out+="${a:--}"$'\t'; done; steps+=("$out"); }
undash() { [ "$1" = - ] && echo "" || echo "$1"; }

# gtest counts from a log: per-test result lines (they survive a crash), summary lines win when present.
gtest_counts() {
  local log="$1" p f s
  p="$(grep -cE '^\[       OK \] .* \([0-9]+ ms\)$' "$log")"
  f="$(grep -cE '^\[  FAILED  \] .* \([0-9]+ ms\)$' "$log")"
  s="$(grep -cE '^\[  SKIPPED \] .* \([0-9]+ ms\)$' "$log")"
  echo "$p $f $s"
}
gtest_list() { # names of failed or skipped tests, at most 15
  grep -E "^\[  $1 *\] .* \([0-9]+ ms\)\$" "$2" | sed -E 's/^\[[^]]*\] ([^ ]+) .*/\1/' | head -15 | tr '\n' ' '
}

# run_step NAME KIND(gtest|plain) TIMEOUT NEEDS_GPU(0|1) -- command...
run_step() {
  local name="$1" kind="$2" limit="$3" needs_gpu="$4"; shift 5
  n=$((${#steps[@]} + 1))
  local log; log="$(printf '%02d' "$n")-$name.log"
  local cmd="$*" left=$((budget - (SECONDS - t0)))
  echo "== check [$n] $name: $cmd"
  if [ "$left" -lt 15 ]; then
    record "$name" skipped "" 0 0 0 0 "$cmd" "not started: the ${budget}s budget is spent" "" ; return
  fi
  [ "$limit" -le "$left" ] || limit="$left"
  if [ ! -x "$1" ] && ! command -v "$1" >/dev/null 2>&1; then
    record "$name" skipped "" 0 0 0 0 "$cmd" "not in the bundle or on PATH: $1" ""; return
  fi
  local t=$SECONDS rc
  { echo "\$ $cmd"; echo "# timeout ${limit}s, $(date -u +%H:%M:%S)"; } >"$results/$log"
  timeout -k 10 "$limit" "$@" >>"$results/$log" 2>&1
  rc=$?
  local secs=$((SECONDS - t)) status note="" p=0 f=0 s=0
  if [ "$kind" = gtest ]; then
    read -r p f s < <(gtest_counts "$results/$log")
  fi
  if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then status=failed; note="timed out after ${limit}s"
  elif [ "$rc" -gt 128 ]; then status=failed; note="killed by signal $((rc - 128))"
  elif [ "$rc" -ne 0 ]; then status=failed; note="exit $rc"
  elif [ "$kind" = gtest ] && [ "$f" -gt 0 ]; then status=failed
  elif [ "$kind" = gtest ] && [ "$p" -eq 0 ] && [ "$s" -eq 0 ]; then status=problem; note="no test ran (filter matched nothing?)"
  elif [ "$kind" = gtest ] && [ "$s" -gt 0 ] && [ "$gpu" = 1 ]; then status=problem; note="$s test(s) skipped on a GPU machine"
  elif [ "$kind" = gtest ] && [ "$s" -gt 0 ]; then status=skipped; note="$s test(s) skipped (no GPU)"
  elif [ "$needs_gpu" = 1 ] && [ "$gpu" = 0 ]; then status=skipped; note="exit 0 without a GPU: not a pass"
  else status=passed; fi
  if [ "$kind" = gtest ] && [ "$f" -gt 0 ]; then note="${note:+$note; }failed: $(gtest_list FAILED "$results/$log")"; fi
  if [ "$kind" = gtest ] && [ "$s" -gt 0 ] && [ "$gpu" = 1 ]; then note="${note:+$note; }skipped: $(gtest_list SKIPPED "$results/$log")"; fi
  record "$name" "$status" "$rc" "$secs" "$p" "$f" "$s" "$cmd" "$note" "$log"
}
# The sm_70 binary on a newer GPU runs only if the driver JIT-compiles its compute_70 PTX.
jit_verdict() {
  local i=$((${#steps[@]} - 1)) log status
  IFS=$'\t' read -r _ status _ _ _ _ _ _ _ log <<<"${steps[$i]}"
  [ "$log" != - ] && [ -f "$results/$log" ] || return 0
  local msg=""
  if grep -qiE 'no kernel image is available|NoKernelImageForDevice|InvalidPtx|UnsupportedPtxVersion|INVALID_PTX|UNSUPPORTED_PTX|InvalidKernelImage|device kernel image is invalid|JitCompiler' "$results/$log"; then
    msg="PTX JIT of compute_70 REFUSED by the driver (see $log): build the sm_70 branches into the sm_90 binary behind a macro (cuda.md §9.4)"
  elif [ "$gpu" != 1 ]; then
    msg="compute_70 PTX: not exercised (no GPU; the tests that passed are the ones that need none)"
  elif [ "$status" = passed ] || grep -qE '^\[       OK \]' "$results/$log"; then
    msg="compute_70 PTX was JIT-compiled by the driver and ran${gpu_line:+ on $gpu_line}"
  fi
  [ -z "$msg" ] || note "$msg"
}

if [ "$gpu" = 1 ]; then
  run_step nvidia-smi plain 30 1 -- sh -c 'nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap,clocks.max.sm --format=csv && nvidia-smi'
  gpu_line="$(nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv,noheader 2>/dev/null | head -1)"
else
  record nvidia-smi skipped "" 0 0 0 0 "nvidia-smi" "no nvidia-smi or no GPU listed" ""
fi
# Every shared library the binaries need must resolve here (the bundle ships what Debian-only; the rest is system).
run_step libraries plain 30 0 -- bash -c 'rc=0; for b in "$0"/*; do [ -e "$b" ] || { echo "no binaries in $0"; exit 1; }; m="$(ldd "$b" 2>&1 | grep "not found")"; if [ -n "$m" ]; then echo "${b##*/}: $m"; rc=1; fi; done; [ $rc = 1 ] || echo "all libraries resolve"; exit $rc' "$bin"
# The tests that need a machine WITHOUT a GPU (the refusal at start) are left out here: they skip on a GPU machine.
# So are those that need two GPUs (*MultiGpu*: NCCL across devices), which the nccl-multi-gpu step runs where two are.
ops_filter="${NINFER_GPU_OPS_FILTER:-*}-*CudaE2E*:*WithoutAGpu*:*MultiGpu*"   # gtest: POSITIVE-NEGATIVE
# ninfer-serve for the serve test (CudaServe.*): the bundle's sm_90 build.
[ -x "$bin/ninfer-serve_sm90" ] && export NINFER_SERVE_BINARY="$bin/ninfer-serve_sm90"
run_step probe gtest 60 1 -- "$bin/ninfer_tests_device_sm90"
run_step ops-sm90 gtest 150 1 -- "$bin/ninfer_tests_cuda_sm90" "--gtest_filter=$ops_filter"
# The serve test starts the bundle's ninfer-serve (sm_90 build) whichever test binary runs it: once is enough.
run_step ops-sm70-jit gtest 180 1 -- "$bin/ninfer_tests_cuda_sm70" "--gtest_filter=$ops_filter:CudaServe.*"
jit_verdict
run_step e2e-sm90 gtest 120 1 -- "$bin/ninfer_tests_cuda_sm90" "--gtest_filter=*CudaE2E*"
sanitizer="$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer /usr/local/cuda/compute-sanitizer/compute-sanitizer 2>/dev/null | head -1)"
if [ ! -x "$bin/ninfer_tests_cuda_sm90" ]; then
  record memcheck skipped "" 0 0 0 0 "compute-sanitizer --tool memcheck" "not in the bundle: $bin/ninfer_tests_cuda_sm90" ""
elif [ -n "$sanitizer" ]; then
  run_step memcheck gtest 120 1 -- "$sanitizer" --tool memcheck --error-exitcode 86 --print-limit 20 \
    "$bin/ninfer_tests_cuda_sm90" "--gtest_filter=${NINFER_GPU_MEMCHECK_FILTER:-*Small*}"
else
  record memcheck skipped "" 0 0 0 0 "compute-sanitizer --tool memcheck" "compute-sanitizer is not installed here" ""
fi
if [ -x "$bin/ninfer-bench-cuda_sm90" ]; then
  # shellcheck disable=SC2086
  run_step bench plain 90 1 -- "$bin/ninfer-bench-cuda_sm90" ${NINFER_GPU_BENCH_ARGS:-}
else
  record bench skipped "" 0 0 0 0 "ninfer-bench-cuda" "no ninfer-bench-cuda in the bundle (not built yet)" ""
fi
# The whole forward at the 27B shape (one GPU's TP2 shard, weights made on the device): decode with step graphs off
# and on, against the bytes-per-token roofline (bench/cuda/e2e_bench.h).
if [ -x "$bin/ninfer-bench-cuda_sm90" ]; then
  run_step bench-e2e plain 150 1 -- "$bin/ninfer-bench-cuda_sm90" --e2e \
    --config "$here/../data/plan/qwen3.5-27b/config.json" --tp 2 --contexts 1024,8192 ${NINFER_GPU_E2E_ARGS:-}
else
  record bench-e2e skipped "" 0 0 0 0 "ninfer-bench-cuda --e2e" "no ninfer-bench-cuda in the bundle" ""
fi
run_step e2e-sm70-jit gtest 120 1 -- "$bin/ninfer_tests_cuda_sm70" "--gtest_filter=*CudaE2E*"
# NCCL across two GPUs: only where nvidia-smi lists two (on one GPU the test could only skip, which is no pass; the
# one-rank NCCL tests and the fake ranks on one GPU run in the ops steps). A note, not a step, says when it cannot run.
gpus=0
[ "$gpu" = 0 ] || gpus="$(timeout 20 nvidia-smi -L 2>/dev/null | grep -c '^GPU ')"
[[ "$gpus" =~ ^[0-9]+$ ]] || gpus=0
if [ "$gpus" -ge 2 ]; then
  nccl_bin="$bin/ninfer_tests_cuda_sm90"; [ -x "$nccl_bin" ] || nccl_bin="$bin/ninfer_tests_cuda_sm70"
  run_step nccl-multi-gpu gtest 60 1 -- "$nccl_bin" "--gtest_filter=*MultiGpu*"
else
  note "nccl-multi-gpu: not run, $gpus GPU(s) listed (NcclMultiGpu.* needs two)"
fi

# ---- summary --------------------------------------------------------------------------------------------------------
# The probe test passes with or without a device; the tests' skip reasons say why the runtime saw none.
if [ "$gpu" = 1 ]; then
  why="$(cat "$results"/*.log 2>/dev/null | grep -m1 -iE 'no (usable )?CUDA device|InsufficientDriver|cudaErrorNoDevice' || true)"
  [ -z "$why" ] || note "PROBLEM: nvidia-smi lists a GPU but the CUDA runtime saw none: $why"
fi
total=$((SECONDS - t0))
np=0; nf=0; ns=0; nq=0
for r in "${steps[@]}"; do
  case "$(cut -f2 <<<"$r")" in passed) np=$((np+1));; failed) nf=$((nf+1));; skipped) ns=$((ns+1));; *) nq=$((nq+1));; esac
done
for x in "${notes[@]}"; do case "$x" in PROBLEM*) nq=$((nq+1));; esac; done
if [ "$nf" -eq 0 ] && [ "$ns" -eq 0 ] && [ "$nq" -eq 0 ]; then verdict=PASSED
elif [ "$gpu" = 0 ]; then verdict="NOT VERIFIED (no GPU)"
else verdict=FAILED; fi
host="$(hostname 2>/dev/null || echo unknown)"
{
  echo "# GPU check: $verdict"
  echo
  echo "$(date -u +%Y-%m-%dT%H:%M:%SZ) on $host; GPU: ${gpu_line:-none}; ${total}s of the ${budget}s budget."
  echo "Steps: $np passed, $nf failed, $ns skipped, $nq problem(s). A skipped step is not a pass."
  echo
  echo "| # | step | status | tests passed/failed/skipped | exit | s | command | note | log |"
  echo "|---:|---|---|---|---:|---:|---|---|---|"
  i=0
  for r in "${steps[@]}"; do
    i=$((i + 1))
    IFS=$'\t' read -r name status rc secs p f s cmd nt log <<<"$r"
    rc="$(undash "$rc")"; nt="$(undash "$nt")"; log="$(undash "$log")"
    echo "| $i | $name | **$status** | $p/$f/$s | $rc | $secs | \`$(esc_md "${cmd//"$payload"/\$BUNDLE}")\` | $(esc_md "$nt") | $log |"
  done
  echo
  echo "## Setup"
  echo
  for x in "${notes[@]}"; do echo "- $(esc_md "$x")"; done
} >"$results/summary.md"

json_str() { local s="$1"; s="${s//\\/\\\\}"; s="${s//\"/\\\"}"; s="${s//$'\t'/ }"; printf '"%s"' "$s"; }
json_num() { if [ -n "$1" ]; then printf '%s' "$1"; else printf 'null'; fi; }
{
  printf '{\n  "verdict": %s,\n  "gpu": %s,\n  "gpu_present": %s,\n  "revision": %s,\n  "seconds": %s,\n  "budget_s": %s,\n' \
    "$(json_str "$verdict")" "$(json_str "$gpu_line")" "$([ "$gpu" = 1 ] && echo true || echo false)" \
    "$(json_str "$NINFER_BUNDLE_REVISION")" "$total" "$budget"
  printf '  "counts": {"passed": %s, "failed": %s, "skipped": %s, "problem": %s},\n  "notes": [' "$np" "$nf" "$ns" "$nq"
  sep=""; for x in "${notes[@]}"; do printf '%s\n    %s' "$sep" "$(json_str "$x")"; sep=","; done
  printf '\n  ],\n  "steps": ['
  sep=""
  for r in "${steps[@]}"; do
    IFS=$'\t' read -r name status rc secs p f s cmd nt log <<<"$r"
    rc="$(undash "$rc")"; nt="$(undash "$nt")"; log="$(undash "$log")"
    printf '%s\n    {"name": %s, "status": %s, "exit_code": %s, "seconds": %s, "tests": {"passed": %s, "failed": %s, "skipped": %s}, "command": %s, "note": %s, "log": %s}' \
      "$sep" "$(json_str "$name")" "$(json_str "$status")" "$(json_num "$rc")" "$secs" "$p" "$f" "$s" \
      "$(json_str "$cmd")" "$(json_str "$nt")" "$(json_str "$log")"
    sep=","
  done
  printf '\n  ]\n}\n'
} >"$results/summary.json"

cat "$results/summary.md"
[ -n "${NINFER_GPU_WORK:-}" ] || rm -rf "$work"
[ "$verdict" = PASSED ]
