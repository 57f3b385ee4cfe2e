#!/usr/bin/env bash
# Whole-model decode, ninfer NVFP4 (W4A4, W4A16) and bf16 vs llama.cpp Q4_0 and bf16, same synthetic Qwen3.5 shapes,
# same threads, one run. llama.cpp is built beside the project (never committed): LLAMA=/work/llama.cpp by default.
# Usage: bench/backend/llama_cpp_compare.sh BUILD_DIR [THREADS] [TOKENS]
set -euo pipefail
BUILD=${1:?build dir}; T=${2:-2}; N=${3:-24}
LLAMA=${LLAMA:-/work/llama.cpp}; DIR=${DIR:-/tmp/nvfp4-bench}
REPO=$(cd "$(dirname "$0")/../.." && pwd)
PY=${PYTHON:-/work/venv/bin/python}
if [ ! -f "$DIR/model-q4_0.gguf" ]; then
  "$BUILD/bench/ninfer-bench-decode" --dir "$DIR" --keep-hf --variants bf16 --tokens 4 --prompt 16 --batch 1 >/dev/null
  "$PY" "$REPO/bench/backend/llama_cpp_convert.py" "$LLAMA" "$DIR/hf" "$DIR/model-bf16.gguf"
  # Q4_0 projections; the tied embedding / lm_head stays bf16 as in ninfer's NVFP4 artifact.
  "$LLAMA/build/bin/llama-quantize" --token-embedding-type bf16 --output-tensor-type bf16 \
    "$DIR/model-bf16.gguf" "$DIR/model-q4_0.gguf" Q4_0 "$T"
fi
echo "== llama.cpp (llama-bench tg$N, $T threads)"
for m in q4_0 bf16; do "$LLAMA/build/bin/llama-bench" -m "$DIR/model-$m.gguf" -t "$T" -p 0 -n "$N" -r 3 | grep qwen35; done
echo "== ninfer (ninfer-bench-decode, $T threads)"
"$BUILD/bench/ninfer-bench-decode" --dir "$DIR" --threads "$T" --tokens "$N" --prompt 64 --batch 8 2>/dev/null
