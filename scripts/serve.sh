#!/usr/bin/env bash
# Builds ninfer-serve (CPU preset) and serves the embedded default model on http://127.0.0.1:8080.
# Extra arguments go to ninfer-serve (e.g. --port 9000 --log-jsonl timings.jsonl).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cmake --preset linux-cpu
cmake --build --preset linux-cpu -j "${NINFER_JOBS:-$(nproc)}" --target ninfer-serve ninfer-pack
exec build/apps/ninfer-serve "$@"
