#!/usr/bin/env bash
# CUDA compiler launcher (CMAKE_CUDA_COMPILER_LAUNCHER, set by cmake/Cuda.cmake when NINFER_CUDA_RESOURCE_REPORT is
# ON): runs the compile command it is given, keeps its full stderr (the ptxas -v resource lines) in
# <object>.ptxas.log beside the object, and passes every other stderr line through, so the build log stays
# readable. scripts/cuda-resources.sh reads the .ptxas.log files.
set -u
out=""
prev=""
for a in "$@"; do
  case "$prev" in -o) out="$a";; esac
  case "$a" in -o?*) out="${a#-o}";; --output-file=*) out="${a#--output-file=}";; esac
  prev="$a"
done
if [ -z "$out" ]; then exec "$@"; fi
tmp="$(mktemp "${TMPDIR:-/tmp}/ninfer-ptxas.XXXXXX")"
"$@" 2>"$tmp"
rc=$?
# ptxas -v lines: "ptxas info    : ..." and the indented "N bytes stack frame, ..." line under each.
grep -Ev '^ptxas info[[:space:]]*:|^[[:space:]]+[0-9]+ bytes stack frame' "$tmp" >&2
if [ "$rc" -eq 0 ]; then
  mkdir -p "$(dirname "$out")"
  mv -f "$tmp" "$out.ptxas.log"
else
  rm -f "$tmp" "$out.ptxas.log"
fi
exit "$rc"
