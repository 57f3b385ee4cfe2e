#!/usr/bin/env bash
# Builds ninfer and runs the whole test suite. With nvcc on PATH (or /usr/local/cuda) the build includes
# the CUDA kernels library (preset linux-cuda); otherwise the CPU-only preset linux-cpu.
# Override with NINFER_PRESET=linux-cpu|linux-cuda.
# After the tests: with the linux-cuda preset, the CUDA resource report (scripts/cuda-resources.sh: fails on
# spills or static smem > 48 KiB); with CI=true or NINFER_VOLTA=1 (NINFER_VOLTA=0 turns it off), the sm_70 compile
# check with the CUDA 12 toolchain (scripts/ci-volta.sh). docs/gpu.md. With NINFER_ASAN=1 (which .ci/run sets), last: the
# server, serving and fuzz-replay tests built and run under ASan + UBSan (scripts/sanitize.sh asan-ci,
# docs/security.md "Sanitizers"); with NINFER_FUZZ_SECONDS=N (.ci/run: 10) each libFuzzer target runs N seconds
# (scripts/fuzz.sh, docs/security.md "Fuzzing"). With NINFER_WINDOWS=1 (.ci/run sets it) the Windows check: the
# MinGW-w64 cross build and its tests under Wine (scripts/windows-mingw.sh, docs/windows.md).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
if [ -z "${NINFER_PRESET:-}" ]; then
  if command -v nvcc >/dev/null 2>&1 || [ -x /usr/local/cuda/bin/nvcc ]; then NINFER_PRESET=linux-cuda; else NINFER_PRESET=linux-cpu; fi
fi
[ -x /usr/local/cuda/bin/nvcc ] && export PATH="/usr/local/cuda/bin:$PATH"
jobs="${NINFER_JOBS:-$(nproc)}"
# The official `openai` Python client drives the server tests, and `jsonschema` judges structured output; they live
# in a venv outside the build.
venv="${NINFER_TEST_VENV:-$PWD/.venv}"
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c "import openai, jsonschema" >/dev/null 2>&1; then
  echo "== python venv with openai and jsonschema ($venv)"
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check openai jsonschema
fi
echo "== configure ($NINFER_PRESET)"
cmake --preset "$NINFER_PRESET" -DNINFER_PYTHON="$venv/bin/python"
echo "== build (-j$jobs)"
cmake --build --preset "$NINFER_PRESET" -j "$jobs"
echo "== test"
ctest --preset "$NINFER_PRESET" -j "$jobs" --timeout 600
res_rc=0   # a failing resource report fails the run, after the sm_70 check has had its say too
if [ "$NINFER_PRESET" = linux-cuda ]; then
  echo "== CUDA resource report (build-cuda)"
  scripts/cuda-resources.sh build-cuda || res_rc=$?
fi
volta="${NINFER_VOLTA:-}"
if [ -z "$volta" ] && [ "${CI:-}" = true ]; then volta=1; fi
if [ "$volta" = 1 ]; then
  if [ -x /usr/local/cuda/bin/fatbinary ]; then
    echo "== sm_70 compile check (scripts/ci-volta.sh)"
    NINFER_JOBS="$jobs" scripts/ci-volta.sh
  elif [ -n "${NINFER_VOLTA:-}" ]; then
    echo "NINFER_VOLTA=1 needs the CUDA 13 toolkit at /usr/local/cuda (its fatbinary and NCCL)" >&2; exit 1
  else
    echo "== sm_70 compile check skipped: no CUDA toolkit at /usr/local/cuda"
  fi
fi
if [ "${NINFER_ASAN:-0}" = 1 ]; then
  echo "== ASan + UBSan: server, serving and fuzz-replay tests (scripts/sanitize.sh asan-ci)"
  NINFER_JOBS="$jobs" NINFER_TEST_VENV="$venv" scripts/sanitize.sh asan-ci
fi
if [ "${NINFER_WINDOWS:-0}" = 1 ]; then
  echo "== Windows: MinGW-w64 cross build, tests under Wine (scripts/windows-mingw.sh, docs/windows.md)"
  NINFER_JOBS="$jobs" NINFER_TEST_VENV="$venv" scripts/windows-mingw.sh
fi
if [ "${NINFER_FUZZ_SECONDS:-0}" -gt 0 ]; then
  echo "== libFuzzer: each target ${NINFER_FUZZ_SECONDS}s (scripts/fuzz.sh)"
  NINFER_JOBS="$jobs" scripts/fuzz.sh "$NINFER_FUZZ_SECONDS"
fi
exit "$res_rc"
