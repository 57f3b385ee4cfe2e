#!/usr/bin/env bash
# What travels to the device tool's GPU machine, and how to make the GPU check's share of the checkout fit. The tool
# sends the working tree (tracked files present in it, untracked files git does not ignore) plus the carried paths,
# 64 MiB at most; the repo's tracked files alone are larger (two ninfer-tiny artifacts, the test fixtures). The GPU
# check reads only part of models/ and tests/data/ (KEEP below), so the rest is moved aside for the device calls.
# docs/gpu.md, "On this workplace's device tool".
#   scripts/gpu-travel.sh size [CARRY...]   bytes that would travel with these carried paths, against the limit
#   scripts/gpu-travel.sh aside             moves the files under models/ and tests/data/ that the check does not read
#                                           into .gpu-aside/ (ignored by git), then prints the size
#   scripts/gpu-travel.sh restore           moves them back and checks that no tracked file is missing
#   scripts/gpu-travel.sh kept              lists the files of models/ and tests/data/ that the check reads (what
#                                           scripts/gpu-bundle.sh --with-data copies)
# Between aside and restore the checkout lacks tracked files: restore before anything else (tests, commits).
set -euo pipefail
cd "$(dirname "$0")/.."
limit=$((64 * 1024 * 1024))
aside_dir=.gpu-aside

# What the CUDA test binaries, the serve test and the e2e bench read (tests/cuda/*, tests/model/reference_model.cpp,
# tests/gpu/check.sh): every path under models/ or tests/data/ outside these prefixes is set aside.
KEEP=(
  models/ninfer-tiny.ninfer
  tests/data/reference/index.json
  tests/data/reference/models/
  tests/data/reference/golden/
  tests/data/reference/ops/
  tests/data/quant/
  tests/data/mtp/
  tests/data/plan/
)

kept() {
  local f=$1 k
  for k in "${KEEP[@]}"; do
    [[ "$f" == "$k" || ( "$k" == */ && "$f" == "$k"* ) ]] && return 0
  done
  return 1
}

# Bytes of the tracked files present, the untracked files git does not ignore, and each carried path.
travel_bytes() {
  local sum=0 n
  n=$( { git ls-files -z; git ls-files -z -o --exclude-standard; } | xargs -0 -r stat -c %s -- 2>/dev/null \
       | awk '{s += $1} END {print s + 0}')
  sum=$((sum + n))
  for c in "$@"; do
    [ -e "$c" ] || { echo "gpu-travel: carried path $c does not exist" >&2; exit 2; }
    n=$(du -sb -- "$c" | cut -f1)
    sum=$((sum + n))
  done
  echo "$sum"
}

report() {
  local bytes
  bytes=$(travel_bytes "$@")
  awk -v b="$bytes" -v l="$limit" 'BEGIN {
    printf "would travel: %.1f MiB of %.0f MiB (%s)\n", b / 1048576, l / 1048576,
           b <= l ? sprintf("%.1f MiB to spare", (l - b) / 1048576) : sprintf("%.1f MiB over: refused", (b - l) / 1048576) }'
  [ "$bytes" -le "$limit" ]
}

case "${1:-}" in
  kept)
    git ls-files -z -- models tests/data | while IFS= read -r -d '' f; do kept "$f" && echo "$f"; done
    ;;
  size)
    shift
    report "$@"
    ;;
  aside)
    if [ -d "$aside_dir" ] && [ -n "$(ls -A "$aside_dir")" ]; then
      echo "gpu-travel: $aside_dir is not empty (files already aside?): run 'scripts/gpu-travel.sh restore' first" >&2
      exit 2
    fi
    grep -qx "/$aside_dir/" .gitignore || { echo "gpu-travel: .gitignore must ignore /$aside_dir/" >&2; exit 2; }
    moved=0 bytes=0
    while IFS= read -r -d '' f; do
      kept "$f" && continue
      [ -e "$f" ] || continue
      bytes=$((bytes + $(stat -c %s -- "$f")))
      mkdir -p "$aside_dir/$(dirname "$f")"
      mv -- "$f" "$aside_dir/$f"
      moved=$((moved + 1))
    done < <(git ls-files -z -- models tests/data)
    echo "set aside: $moved files, $((bytes / 1048576)) MiB, in $aside_dir/ (scripts/gpu-travel.sh restore puts them back)"
    report
    ;;
  restore)
    if [ -d "$aside_dir" ]; then
      (cd "$aside_dir" && find . -type f -print0) | while IFS= read -r -d '' f; do
        f=${f#./}
        mkdir -p "$(dirname "$f")"
        mv -- "$aside_dir/$f" "$f"
      done
      find "$aside_dir" -depth -type d -empty -delete
    fi
    missing=$(git ls-files -d | head -5)
    if [ -n "$missing" ]; then
      echo "gpu-travel: tracked files still missing (first five):" >&2
      echo "$missing" >&2
      exit 1
    fi
    echo "restored: no tracked file is missing"
    ;;
  *)
    sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'
    exit 2
    ;;
esac
