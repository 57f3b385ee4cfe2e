#!/usr/bin/env bash
# The sm_70 (V100) compile check that CI runs after the test suite (scripts/test.sh with CI=true or NINFER_VOLTA=1;
# docs/gpu.md): assembles the CUDA 12 toolchain (scripts/cuda12-toolchain.sh), configures preset ci-volta-clang
# (clang-19 over the CUDA 12.9 wheels, build-volta-clang/), builds the kernels, the CUDA op test binary and
# ninfer-serve for sm_70, and checks the resource report (scripts/cuda-resources.sh). Compile/link only: nothing
# here runs on a GPU. Prints how long each step took.
#
#   scripts/ci-volta.sh            env: NINFER_JOBS (default nproc), NINFER_CUDA12_PREFIX (toolchain location)
set -euo pipefail
cd "$(dirname "$0")/.."
jobs="${NINFER_JOBS:-$(nproc)}"
build=build-volta-clang
lock="${NINFER_BUILD_LOCK:-}"   # e.g. /tmp/ninfer-build.lock on a shared dev machine; CI needs none
locked() { if [ -n "$lock" ]; then flock "$lock" "$@"; else "$@"; fi; }
t_all=$SECONDS

t=$SECONDS
echo "== volta: CUDA 12 toolchain"
scripts/cuda12-toolchain.sh ${NINFER_CUDA12_PREFIX:+"$NINFER_CUDA12_PREFIX"}
prefix="${NINFER_CUDA12_PREFIX:-${XDG_CACHE_HOME:-$HOME/.cache}/ninfer/cuda12}"
# shellcheck source=/dev/null
. "$prefix/env.sh"
t_tool=$((SECONDS - t))

t=$SECONDS
echo "== volta: configure (ci-volta-clang)"
py_arg=()
[ -x "${NINFER_TEST_VENV:-$PWD/.venv}/bin/python" ] && py_arg=(-DNINFER_PYTHON="${NINFER_TEST_VENV:-$PWD/.venv}/bin/python")
locked cmake --preset ci-volta-clang "${py_arg[@]}" >/dev/null
t_conf=$((SECONDS - t))

# The targets: the kernels, the CUDA op test binary (tests/cuda) when it exists, the CUDA bench when it exists,
# ninfer-serve.
all_targets="$(ninja -C "$build" -t targets all 2>/dev/null || true)"
have_target() { grep -q "^$1: " <<<"$all_targets"; }
targets=(ninfer_kernels)
for tgt in ninfer_tests_cuda ninfer-bench-cuda; do
  if have_target "$tgt"; then targets+=("$tgt"); else echo "== volta: no target $tgt yet, not built"; fi
done
targets+=(ninfer-serve)

t=$SECONDS
echo "== volta: build ${targets[*]} (-j$jobs)"
locked cmake --build "$build" -j "$jobs" --target "${targets[@]}"
t_build=$((SECONDS - t))

t=$SECONDS
echo "== volta: resource report"
rc=0
scripts/cuda-resources.sh "$build" || rc=$?
t_res=$((SECONDS - t))

echo "== volta: toolchain ${t_tool}s, configure ${t_conf}s, build ${t_build}s, resource report ${t_res}s," \
     "total $((SECONDS - t_all))s"
exit "$rc"
