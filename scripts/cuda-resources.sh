#!/usr/bin/env bash
# Resource report of a CUDA build: per kernel and architecture, registers, spill stores/loads, static shared
# memory, stack frame, from the ptxas -v output kept at compile time (cmake option NINFER_CUDA_RESOURCE_REPORT).
#
#   scripts/cuda-resources.sh BUILD_DIR [--out FILE] [--allow FILE] [--no-fail]
#
# Writes BUILD_DIR/cuda-resources.md (+ .json). Exit 1 when a kernel spills or uses more than 48 KiB of static
# shared memory (sm_70's limit without opt-in) and scripts/cuda-resources.allow does not name it; 2 when the build
# has no ptxas logs (not configured with the option, or nothing compiled). NINFER_CUDA_RESOURCES_NO_FAIL=1: report
# only (for a local run while a kernel is being tuned; CI keeps it strict). docs/gpu.md.
set -euo pipefail
exec python3 "$(dirname "$0")/cuda_resources.py" "$@"
