#!/usr/bin/env bash
# Builds ninfer and runs the whole test suite. With nvcc on PATH (or /usr/local/cuda) the build includes
# the CUDA kernels library (preset linux-cuda); otherwise the CPU-only preset linux-cpu.
# Override with NINFER_PRESET=linux-cpu|linux-cuda.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
if [ -z "${NINFER_PRESET:-}" ]; then
  if command -v nvcc >/dev/null 2>&1 || [ -x /usr/local/cuda/bin/nvcc ]; then NINFER_PRESET=linux-cuda; else NINFER_PRESET=linux-cpu; fi
fi
[ -x /usr/local/cuda/bin/nvcc ] && export PATH="/usr/local/cuda/bin:$PATH"
jobs="${NINFER_JOBS:-$(nproc)}"
# The official `openai` Python client drives one of the server tests; it lives in a venv outside the build.
venv="${NINFER_TEST_VENV:-$PWD/.venv}"
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c "import openai" >/dev/null 2>&1; then
  echo "== python venv with openai ($venv)"
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check openai
fi
echo "== configure ($NINFER_PRESET)"
cmake --preset "$NINFER_PRESET" -DNINFER_PYTHON="$venv/bin/python"
echo "== build (-j$jobs)"
cmake --build --preset "$NINFER_PRESET" -j "$jobs"
echo "== test"
ctest --preset "$NINFER_PRESET" -j "$jobs" --timeout 600
