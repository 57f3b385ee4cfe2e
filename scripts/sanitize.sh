#!/usr/bin/env bash
# Builds and runs the test suite under a sanitizer (docs/security.md "Sanitizers").
#   scripts/sanitize.sh asan         the whole suite under ASan + UBSan (+ LSan), build-asan/
#   scripts/sanitize.sh asan-ci      the server, serving and fuzz-replay tests only (what CI runs: the engine and
#                                    server libraries instrumented, not the kernel-heavy test binaries)
#   scripts/sanitize.sh tsan         the engine and server concurrency tests under TSan, build-tsan/
# Extra arguments go to ctest (e.g. -R Tokenizer). Any sanitizer report aborts its process: the test fails.
set -euo pipefail
cd "$(dirname "$0")/.."
mode="${1:-asan}"
shift || true
jobs="${NINFER_JOBS:-$(nproc)}"
venv="${NINFER_TEST_VENV:-$PWD/.venv}"
py=()
[ -x "$venv/bin/python" ] && py=(-DNINFER_PYTHON="$venv/bin/python")

# Reports go to stderr and abort; LSan reports leaks at exit. The suppression files name what is not ours.
export ASAN_OPTIONS="${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1:strict_string_checks=1:detect_stack_use_after_return=1:check_initialization_order=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
export TSAN_OPTIONS="${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1:suppressions=$PWD/scripts/tsan.supp}"

# The test binaries of the server and the serving path (ctest labels server, serve), and for TSan also the
# engine loop and the tensor-parallel ranks (labels engine, parallel).
server_targets=(server_unit_test server_http_test server_hostile_test ninfer_tests_serve ninfer-fake-serve ninfer-serve)
case "$mode" in
  asan)
    cmake --preset asan "${py[@]}"
    cmake --build build-asan -j "$jobs"
    ctest --test-dir build-asan -j "$jobs" --timeout 1200 --output-on-failure "$@"
    ;;
  asan-ci)
    cmake --preset asan "${py[@]}"
    fuzz=()
    while read -r t; do fuzz+=("fuzz_${t}_replay"); done < tests/fuzz/targets.txt
    cmake --build build-asan -j "$jobs" --target "${server_targets[@]}" "${fuzz[@]}"
    # serve_structured_output_real (51 sampled requests and the forced tool calls against the server) takes more than
    # five minutes instrumented: it runs in the plain suite only.
    ctest --test-dir build-asan -j "$jobs" --timeout 1200 --output-on-failure -L '^(server|serve|fuzz)$' \
      -E '^serve_structured_output_real$' "$@"
    ;;
  tsan)
    cmake --preset tsan "${py[@]}"
    cmake --build build-tsan -j "$jobs" --target "${server_targets[@]}" ninfer_tests_engine ninfer_tests_parallel
    ctest --test-dir build-tsan -j "$jobs" --timeout 1200 --output-on-failure -L '^(server|serve|engine|parallel)$' "$@"
    ;;
  *)
    echo "usage: scripts/sanitize.sh asan|asan-ci|tsan [ctest arguments]" >&2
    exit 2
    ;;
esac
