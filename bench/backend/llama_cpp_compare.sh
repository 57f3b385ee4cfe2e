#!/usr/bin/env bash
# ninfer vs llama.cpp on the same synthetic model, same threads, one run: ninfer NVFP4 (W4A4, W4A16) and bf16 against
# llama.cpp Q4_0 and bf16; for decode also each one's small-head format (ninfer W4A4 with an nvfp4 lm_head, llama.cpp's
# default Q4_0 with its Q6_K output tensor). Two modes: whole-model decode (the default), and prompt processing (--prefill). This
# script owns the comparison and the llama.cpp build it needs: llama.cpp is never part of the project; the user names
# a checkout (source tree) and, when it has no build yet, the script builds it there (CMake, CPU only, into
# LLAMA_CPP/build). The numbers of docs/benchmarks.md were measured with llama.cpp 0c1e57098.
#
# Usage: bench/backend/llama_cpp_compare.sh [--llama-cpp DIR] [--shape S] [--prefill] BUILD_DIR [THREADS] [TOKENS]
#   BUILD_DIR     an ninfer build with bench/ninfer-bench-decode (e.g. `cmake --preset linux-cpu` -> build)
#   --llama-cpp   the llama.cpp source checkout (or set LLAMA_CPP=DIR); its build goes to DIR/build
#   --shape       the synthetic model (ninfer-bench-decode --shape): qwen35 (1 GB, default), qwen35-1b, qwen3-0.6b
#   --prefill     prompt processing: each case of PREFILL_CASES, llama.cpp then ninfer, W4A4 vs Q4_0 and bf16 vs bf16
#                 (ninfer bf16 with f32 activations, and `bf16-act`: --dense-activations bf16, as llama.cpp rounds them)
# Environment: LLAMA_CPP (as --llama-cpp), DIR (models; default /tmp/nvfp4-bench for qwen35, else
# /tmp/ninfer-llama-SHAPE), PYTHON (runs llama.cpp's converter; default: the tools venv through scripts/tools-env.sh),
# NINFER_JOBS (build jobs, default nproc), LLAMA_CMAKE_ARGS (replaces the CPU-tuning part of llama.cpp's configure,
# default -DGGML_NATIVE=ON; on a VM whose CPU lists AMX but does not let a process use it (SIGILL at the first
# tilezero in llama-bench: the machine of 2026-12-07), name the instruction sets instead, as docs/benchmarks.md
# shows), PREFILL_CASES (--prefill: "THREADS:PROMPT:CHUNK ...", default
# "1:512:512 2:512:512 2:2048:512 2:2048:2048"; CHUNK is ninfer's --prefill-chunk and llama.cpp's -ub, -b PROMPT).
set -euo pipefail

die() { echo "llama_cpp_compare: error: $*" >&2; exit 1; }
usage() { sed -n '8,21p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }

llama="${LLAMA_CPP:-${LLAMA:-}}"   # LLAMA: the old name of the variable
args=()
shape=qwen35
prefill=0
while [ "$#" -gt 0 ]; do
  case "$1" in
    --llama-cpp) [ "$#" -ge 2 ] || usage; llama="$2"; shift 2 ;;
    --llama-cpp=*) llama="${1#*=}"; shift ;;
    --shape) [ "$#" -ge 2 ] || usage; shape="$2"; shift 2 ;;
    --shape=*) shape="${1#*=}"; shift ;;
    --prefill) prefill=1; shift ;;
    -h|--help) usage ;;
    *) args+=("$1"); shift ;;
  esac
done
if [ "${#args[@]}" -lt 1 ] || [ "${#args[@]}" -gt 3 ]; then usage; fi
BUILD="${args[0]}"; T="${args[1]:-2}"; N="${args[2]:-24}"
case "$shape" in
  qwen35) DIR="${DIR:-/tmp/nvfp4-bench}" ;;
  qwen35-1b|qwen3-0.6b) DIR="${DIR:-/tmp/ninfer-llama-$shape}" ;;
  *) die "--shape: unknown '$shape' (qwen35, qwen35-1b, qwen3-0.6b)" ;;
esac
cases="${PREFILL_CASES:-1:512:512 2:512:512 2:2048:512 2:2048:2048}"
REPO="$(cd "$(dirname "$0")/../.." && pwd)"
jobs="${NINFER_JOBS:-$(nproc)}"

decode="$BUILD/bench/ninfer-bench-decode"
[ -x "$decode" ] ||
  die "$decode not found: build it first, e.g. cmake --preset linux-cpu && cmake --build build --target ninfer-bench-decode"
[ -n "$llama" ] || die "no llama.cpp checkout given: pass --llama-cpp DIR or set LLAMA_CPP=DIR (a llama.cpp source tree; \
docs/benchmarks.md says which revision and how to get one)"
[ -d "$llama" ] || die "llama.cpp checkout '$llama' does not exist"
llama="$(cd "$llama" && pwd)"
if [ ! -f "$llama/convert_hf_to_gguf.py" ] || [ ! -d "$llama/gguf-py" ]; then
  die "'$llama' is not a llama.cpp source tree (no convert_hf_to_gguf.py and gguf-py/); the converter needs the source"
fi

bin="$llama/build/bin"
if [ ! -x "$bin/llama-bench" ] || [ ! -x "$bin/llama-quantize" ]; then
  [ -f "$llama/CMakeLists.txt" ] || die "'$llama' has no CMakeLists.txt and no build/bin/llama-bench"
  echo "== building llama.cpp in $llama/build (CPU only, -j$jobs)"
  # CPU only, tuned for this machine (GGML_NATIVE is llama.cpp's default); no network client, tests or server.
  # Options a given revision does not know (LLAMA_CURL is older, LLAMA_OPENSSL newer) are only warned about.
  # shellcheck disable=SC2086  # LLAMA_CMAKE_ARGS is a list of arguments
  cmake -S "$llama" -B "$llama/build" -DCMAKE_BUILD_TYPE=Release -DGGML_CUDA=OFF ${LLAMA_CMAKE_ARGS:--DGGML_NATIVE=ON} \
    -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
    -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_APP=OFF
  cmake --build "$llama/build" -j "$jobs" --target llama-bench llama-quantize
  if [ ! -x "$bin/llama-bench" ] || [ ! -x "$bin/llama-quantize" ]; then
    die "llama.cpp build finished without $bin/llama-bench or $bin/llama-quantize"
  fi
fi

if [ -n "${PYTHON:-}" ]; then py=("$PYTHON"); else py=("$REPO/scripts/tools-env.sh" python); fi

if [ ! -f "$DIR/model-q4_0.gguf" ]; then
  "$decode" --dir "$DIR" --shape "$shape" --keep-hf --variants bf16 --tokens 4 --prompt 16 --batch 1 >/dev/null
  "${py[@]}" "$REPO/bench/backend/llama_cpp_convert.py" "$llama" "$DIR/hf" "$DIR/model-bf16.gguf"
  # Q4_0 projections; the tied embedding / lm_head stays bf16 as in ninfer's NVFP4 artifact.
  "$bin/llama-quantize" --token-embedding-type bf16 --output-tensor-type bf16 \
    "$DIR/model-bf16.gguf" "$DIR/model-q4_0.gguf" Q4_0 "$T"
fi
# llama-bench's result rows (markdown), without its header: the model's row names the architecture.
lbench() { "$bin/llama-bench" "$@" | grep -E '^\| (qwen|model)' | grep -v '^| model' || true; }

if [ "$prefill" = 0 ]; then
  # llama.cpp's default Q4_0 (the output tensor as Q6_K, the embedding as Q4_0) against ninfer's W4A4 with an nvfp4
  # lm_head (ninfer-pack --quant-lm-head nvfp4): each engine's own small-head format.
  if [ ! -f "$DIR/model-q4_0-default.gguf" ]; then
    "$bin/llama-quantize" "$DIR/model-bf16.gguf" "$DIR/model-q4_0-default.gguf" Q4_0 "$T" >/dev/null 2>&1
  fi
  echo "== llama.cpp (llama-bench tg$N, $T threads; $llama): q4_0 (bf16 head), q4_0-default (Q6_K head), bf16"
  for m in q4_0 q4_0-default bf16; do lbench -m "$DIR/model-$m.gguf" -t "$T" -p 0 -n "$N" -r 3; done
  echo "== ninfer (ninfer-bench-decode, $T threads)"
  "$decode" --dir "$DIR" --shape "$shape" --threads "$T" --tokens "$N" --prompt 64 --batch 8 \
    --variants bf16,bf16-act,w4a4,w4a16,w4a4-head 2>/dev/null
  exit 0
fi

# Prompt processing, case by case: llama.cpp (Q4_0, bf16; llama-bench's own warm-up run first) then ninfer (W4A4,
# bf16, and bf16 with --dense-activations bf16 as llama.cpp rounds them; after its short warm-up request), so both see the machine in the same minutes.
echo "== prefill, shape $shape, cases (threads:prompt:chunk) $cases; llama.cpp $llama"
echo "llama.cpp columns: model | size | params | backend | threads | n_batch | n_ubatch | test | t/s"
for c in $cases; do
  IFS=: read -r t p u <<<"$c"
  [ -n "$t" ] && [ -n "$p" ] && [ -n "$u" ] || die "PREFILL_CASES: '$c' is not THREADS:PROMPT:CHUNK"
  echo "-- case $c: llama.cpp"
  for m in q4_0 bf16; do lbench -m "$DIR/model-$m.gguf" -t "$t" -p "$p" -n 0 -b "$p" -ub "$u" -r 1; done
  echo "-- case $c: ninfer"
  "$decode" --dir "$DIR" --shape "$shape" --threads "$t" --prompt "$p" --prefill-chunk "$u" --prefill-only \
    --variants w4a4,bf16,bf16-act 2>/dev/null | grep -E '^\| (w4a4|bf16|bf16-act) '
done
