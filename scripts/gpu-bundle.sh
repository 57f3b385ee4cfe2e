#!/usr/bin/env bash
# Assembles the GPU check bundle: everything tests/gpu/check.sh runs on a GPU machine, built here (docs/gpu.md).
#
#   scripts/gpu-bundle.sh [options] DIR        e.g. scripts/gpu-bundle.sh build-gpu-bundle
#
#   --sm90-build B   the CUDA 13 build (default build-cuda, preset linux-cuda: sm_75..sm_90)
#   --sm70-build B   the sm_70 build (default build-volta-clang, preset ci-volta-clang)
#   --with-data      copy what the CUDA tests read into DIR/data for a machine without a checkout: the files of
#                    models/ and tests/data/ that `scripts/gpu-travel.sh kept` lists (~50 MB)
#   --with-all-data  copy all of tests/data and models/ (~60 MB)
#                    without either, check.sh uses the checkout DIR sits in (or NINFER_GPU_DATA_ROOT)
#   --no-compress    leave bin/ and lib/ as plain files (default: one payload.tar.xz, unpacked by check.sh)
#   --slim           build (and use) build-gpu-sm90, a bundle-only build with CMAKE_CUDA_ARCHITECTURES=90-real (sm_90
#                    SASS only, not sm_75..89 SASS + PTX: a fifth of the code), small enough to travel with the
#                    repo (docs/gpu.md), and bring build-volta-clang (sm_70 only already) up to date; NINFER_BUILD_LOCK
#                    as in scripts/ci-volta.sh
#   --skip NAMES     leave out bundle binaries (comma-separated, e.g. ninfer_tests_device_sm90,ninfer-bench-cuda_sm90);
#                    check.sh reports their steps as skipped
#   --all-libs       also ship libssl, libcrypto and libz (every Ubuntu/Debian image has them; check.sh lists any
#                    library the GPU machine lacks in its first step)
#
# DIR gets: check.sh (a copy of tests/gpu/check.sh), manifest.env (source root, git revision, which binary came
# from which build), payload.tar.xz = bin/ (stripped: ninfer_tests_cuda_sm90, ninfer_tests_device_sm90,
# ninfer-bench-cuda_sm90 when built, ninfer-serve_sm90, ninfer_tests_cuda_sm70) + lib/ (the shared libraries a bare CUDA image lacks:
# fmt, spdlog, xxhash, libcudart.so.12 and .13; never libnccl or cuBLAS, which check.sh takes from the GPU
# machine's Python wheels), and with --with-data, data/. Inside a checkout DIR should be ignored by git: the
# default name build-gpu-bundle is (/build*/).
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"
sm90=build-cuda
sm70=build-volta-clang
with_data=0
compress=1
slim=0
all_libs=0
skip=",,"
dir=""
while [ $# -gt 0 ]; do
  case "$1" in
    --sm90-build) sm90="$2"; shift 2;;
    --sm70-build) sm70="$2"; shift 2;;
    --with-data) with_data=1; shift;;
    --with-all-data) with_data=2; shift;;
    --no-compress) compress=0; shift;;
    --slim) slim=1; shift;;
    --all-libs) all_libs=1; shift;;
    --skip) skip=",$2,"; shift 2;;
    -h|--help) sed -n '2,32p' "$0"; exit 0;;
    -*) echo "gpu-bundle: unknown option $1" >&2; exit 2;;
    *) [ -z "$dir" ] || { echo "gpu-bundle: one DIR only" >&2; exit 2; }; dir="$1"; shift;;
  esac
done
[ -n "$dir" ] || { sed -n '2,32p' "$0" >&2; exit 2; }
if [ "$slim" = 1 ]; then
  lock="${NINFER_BUILD_LOCK:-}"
  locked() { if [ -n "$lock" ]; then flock "$lock" "$@"; else "$@"; fi; }
  jobs="${NINFER_JOBS:-$(nproc)}"
  py=()
  [ -x "$root/.venv/bin/python" ] && py=(-DNINFER_PYTHON="$root/.venv/bin/python")
  echo "== gpu-bundle: build-gpu-sm90 (sm_90 SASS only)"
  locked cmake --preset linux-cuda -B build-gpu-sm90 -DCMAKE_CUDA_ARCHITECTURES=90-real "${py[@]}" >/dev/null
  t90=(ninfer_tests_cuda ninfer_tests_device ninfer-serve)
  all90="$(ninja -C build-gpu-sm90 -t targets all 2>/dev/null || true)"
  if grep -q '^ninfer-bench-cuda: ' <<<"$all90"; then t90+=(ninfer-bench-cuda); fi
  locked cmake --build build-gpu-sm90 -j "$jobs" --target "${t90[@]}"
  echo "== gpu-bundle: build-volta-clang (sm_70)"
  scripts/cuda12-toolchain.sh >/dev/null
  # shellcheck source=/dev/null
  . "${NINFER_CUDA12_PREFIX:-${XDG_CACHE_HOME:-$HOME/.cache}/ninfer/cuda12}/env.sh"
  locked cmake --preset ci-volta-clang "${py[@]}" >/dev/null   # build-volta-clang is sm_70 only already
  locked cmake --build build-volta-clang -j "$jobs" --target ninfer_tests_cuda
  sm90=build-gpu-sm90
  sm70=build-volta-clang
fi
mkdir -p "$dir"
dir="$(cd "$dir" && pwd)"
case "$dir" in "$root"|/) echo "gpu-bundle: refusing to use $dir" >&2; exit 2;; esac
rm -rf "$dir/bin" "$dir/lib" "$dir/data" "$dir/payload.tar.xz" "$dir/manifest.env" "$dir/check.sh"
mkdir -p "$dir/bin" "$dir/lib"

source_root_of() { sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$1/CMakeCache.txt" 2>/dev/null; }
binaries=()   # "bundle name|build dir (absolute)|path in the build"
missing=()
add_bin() { # add_bin BUILD RELPATH NAME [required]
  local b="$1" rel="$2" name="$3"
  case "$skip" in *",$name,"*) missing+=("$name (--skip)"); return;; esac
  if [ -x "$b/$rel" ]; then
    strip --strip-unneeded -o "$dir/bin/$name" "$b/$rel"
    binaries+=("$name|$(cd "$b" && pwd)|$rel")
  else
    missing+=("$name ($b/$rel)")
  fi
}
find_rel() { # first executable named $2 under build $1, relative path
  local f; f="$(find "$1" -path "$1/CMakeFiles" -prune -o -type f -name "$2" -perm -u+x -print 2>/dev/null | head -1)"
  [ -n "$f" ] && echo "${f#"$1"/}"
}

src_root=""
if [ -d "$sm90" ]; then
  src_root="$(source_root_of "$sm90")"
  add_bin "$sm90" tests/cuda/ninfer_tests_cuda ninfer_tests_cuda_sm90
  add_bin "$sm90" tests/device/ninfer_tests_device ninfer_tests_device_sm90
  rel="$(find_rel "$sm90" ninfer-bench-cuda || true)"
  if [ -n "$rel" ]; then add_bin "$sm90" "$rel" ninfer-bench-cuda_sm90; fi
  add_bin "$sm90" apps/ninfer-serve ninfer-serve_sm90   # the serve test's server (NINFER_SERVE_BINARY)
else
  missing+=("the sm_90 build $sm90 (cmake --preset linux-cuda && cmake --build build-cuda)")
fi
if [ -d "$sm70" ]; then
  s="$(source_root_of "$sm70")"
  if [ -n "$src_root" ] && [ -n "$s" ] && [ "$s" != "$src_root" ]; then
    echo "gpu-bundle: $sm90 and $sm70 come from different checkouts ($src_root, $s)" >&2; exit 1
  fi
  src_root="${src_root:-$s}"
  add_bin "$sm70" tests/cuda/ninfer_tests_cuda ninfer_tests_cuda_sm70
else
  missing+=("the sm_70 build $sm70 (scripts/ci-volta.sh)")
fi
[ ${#binaries[@]} -gt 0 ] || { echo "gpu-bundle: no binaries found: ${missing[*]}" >&2; exit 1; }

# Shared libraries: what ldd resolves, minus the base system (present on any glibc distribution), the driver,
# NCCL (474 MB for cu12; the GPU machine's nvidia-nccl-cu13 wheel has the same soname) and cuBLAS (too large:
# the GPU machine's nvidia-cublas wheel).
system_re='^(linux-vdso|ld-linux|libc\.|libm\.|libstdc\+\+|libgcc_s|libdl\.|libpthread|librt\.|libcuda\.|libnvidia-)'
[ "$all_libs" = 1 ] || system_re="${system_re%)}|libssl\\.|libcrypto\\.|libz\\.)"
external_re='^(libnccl|libcublas|libcublasLt)\.'
external=()
for entry in "${binaries[@]}"; do
  name="${entry%%|*}"
  while read -r so arrow path _; do
    [ "$arrow" = "=>" ] || continue
    if [ "$path" = "not" ]; then echo "gpu-bundle: $name: $so not found (ldd)" >&2; exit 1; fi
    if [[ "$so" =~ $system_re ]]; then continue; fi
    if [[ "$so" =~ $external_re ]]; then external+=("$so"); continue; fi
    [ -f "$dir/lib/$so" ] || strip --strip-unneeded -o "$dir/lib/$so" "$(readlink -f "$path")"
  done < <(ldd "$dir/bin/$name")
done

rev="$(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
dirty="$(git status --porcelain --untracked-files=no 2>/dev/null | grep -q . && echo " (+ uncommitted changes)" || true)"
{
  echo "# ninfer GPU bundle, written by scripts/gpu-bundle.sh"
  echo "NINFER_BUNDLE_CREATED='$(date -u +%Y-%m-%dT%H:%M:%SZ)'"
  echo "NINFER_BUNDLE_REVISION='$rev$dirty'"
  echo "NINFER_BUNDLE_SOURCE_ROOT='$src_root'"
  echo "NINFER_BUNDLE_EXTERNAL_LIBS='$(printf '%s\n' "${external[@]}" | sort -u | tr '\n' ' ')'"
  echo "NINFER_BUNDLE_BINARIES='$(printf '%s\n' "${binaries[@]}" | tr '\n' ' ')'"
  echo "NINFER_BUNDLE_MISSING='$( [ ${#missing[@]} -eq 0 ] || printf '%s; ' "${missing[@]}")'"
} >"$dir/manifest.env"
cp tests/gpu/check.sh "$dir/check.sh"
chmod +x "$dir/check.sh"

if [ "$with_data" != 0 ]; then
  mkdir -p "$dir/data/tests/data"
  if [ "$with_data" = 2 ]; then
    cp -a tests/data/. "$dir/data/tests/data/"
  else
    scripts/gpu-travel.sh kept | while IFS= read -r f; do cp -a --parents "$f" "$dir/data/"; done
  fi
  [ "$with_data" = 2 ] && cp -a models "$dir/data/"
  [ -f "$dir/data/models/ninfer-tiny.ninfer" ] || { echo "gpu-bundle: models/ninfer-tiny.ninfer was not copied" >&2; exit 1; }
fi
plain_kib="$(du -sk "$dir/bin" "$dir/lib" | awk '{s+=$1} END {print s}')"
if [ "$compress" = 1 ]; then
  tar -C "$dir" -cf - bin lib | xz -9 -T1 >"$dir/payload.tar.xz"   # -9: a 64 MiB window spans binaries
  rm -rf "$dir/bin" "$dir/lib"
fi

echo "gpu-bundle: $dir (revision $rev$dirty, source root $src_root)"
for entry in "${binaries[@]}"; do echo "  bin/${entry%%|*}  <- ${entry#*|}"; done
for m in "${missing[@]}"; do echo "  missing: $m"; done
[ ${#external[@]} -eq 0 ] || echo "  from the GPU machine: $(printf '%s\n' "${external[@]}" | sort -u | tr '\n' ' ')"
echo "  binaries + libraries: $((plain_kib / 1024)).$(( (plain_kib % 1024) * 10 / 1024 )) MiB stripped" \
     "$([ "$compress" = 1 ] && echo "-> payload.tar.xz $(du -k "$dir/payload.tar.xz" | awk '{printf "%.1f", $1/1024}') MiB")"
echo "  whole bundle: $(du -sk "$dir" | awk '{printf "%.1f", $1/1024}') MiB$([ "$with_data" != 0 ] && echo ' (with data)')"
echo "  run: $dir/check.sh RESULTS_DIR   (from a checkout: tests/gpu/check.sh RESULTS_DIR)"
