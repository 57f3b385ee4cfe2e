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
echo "== configure ($NINFER_PRESET)"
cmake --preset "$NINFER_PRESET"
echo "== build (-j$jobs)"
cmake --build --preset "$NINFER_PRESET" -j "$jobs"
echo "== test"
ctest --preset "$NINFER_PRESET" -j "$jobs" --timeout 600
