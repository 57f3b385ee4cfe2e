#!/usr/bin/env bash
# Assembles a CUDA 12 toolchain that compiles for sm_70 (V100) on a machine whose system toolkit is CUDA 13
# (which dropped sm_70): Debian's clang-19 as the CUDA compiler over the CUDA 12.9 PyPI wheels, with CUDA 13's
# fatbinary behind a shim (../shared/docs/cuda.md §1.4, "Recipe A"; docs/gpu.md).
#
#   scripts/cuda12-toolchain.sh [PREFIX]      default PREFIX: ${XDG_CACHE_HOME:-$HOME/.cache}/ninfer/cuda12
#
# PREFIX/venv       python venv with nvidia-cuda-{nvcc,runtime,cccl}-cu12 12.9.x (ptxas 12.9, libdevice, headers,
#                   libcudart.so.12); not the 352 MB NCCL wheel
# PREFIX/cuda       a CUDA_HOME of symlinks into the venv, plus two shims in bin/: fatbinary (clang's --image=
#                   syntax → CUDA 13's --image3=) and nvcc (answers only --version, which is all CMake asks)
# PREFIX/nccl       include/nccl.h + lib/libnccl.so from /usr/local/cuda (NCCL 2.28, no sm_70 SASS): enough to
#                   compile and link; a binary meant to run on a V100 needs nvidia-nccl-cu12's libnccl.so.2
#                   (or the GPU machine's own libnccl.so.2) on LD_LIBRARY_PATH at run time
# PREFIX/env.sh     exports NINFER_CUDA12_HOME, NINFER_NCCL_ROOT, NINFER_CUDA12_CLANG (read by the ci-volta-clang
#                   preset): `source PREFIX/env.sh && cmake --preset ci-volta-clang`
#
# Idempotent: a second run only checks (no download, no apt). Needs apt-get (root) the first time when clang-19
# is missing, and pip access to PyPI (or a wheel house in pip's find-links).
set -euo pipefail

prefix="${1:-${NINFER_CUDA12_PREFIX:-${XDG_CACHE_HOME:-$HOME/.cache}/ninfer/cuda12}}"
sys_cuda="${NINFER_SYSTEM_CUDA:-/usr/local/cuda}"   # CUDA 13: its fatbinary accepts sm_70 images; nccl for linking
wheel_ver="${NINFER_CUDA12_WHEELS:-12.9.*}"
wheels=(nvidia-cuda-nvcc-cu12 nvidia-cuda-runtime-cu12 nvidia-cuda-cccl-cu12)
stamp="$prefix/.complete-v1"

say() { printf '== cuda12-toolchain: %s\n' "$*"; }
die() { printf 'cuda12-toolchain: error: %s\n' "$*" >&2; exit 1; }

# ---- 1. clang-19 --------------------------------------------------------------------------------------------
find_clang() {
  local c
  for c in "${NINFER_CUDA12_CLANG:-}" clang++-19 /usr/lib/llvm-19/bin/clang++; do
    [ -n "$c" ] || continue
    if command -v "$c" >/dev/null 2>&1; then command -v "$c"; return 0; fi
  done
  return 1
}
if ! clang="$(find_clang)"; then
  command -v apt-get >/dev/null 2>&1 || die "clang++-19 is missing and there is no apt-get (install clang 19 and set NINFER_CUDA12_CLANG)"
  sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
  say "installing clang-19 (apt-get)"
  if ! apt-cache show clang-19 >/dev/null 2>&1; then $sudo apt-get update -qq; fi
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends clang-19 >/dev/null
  clang="$(find_clang)" || die "clang-19 installed but clang++-19 is not on PATH"
fi
clang_ver="$("$clang" --version | sed -n '1s/.*version \([0-9][0-9.]*\).*/\1/p')"
case "$clang_ver" in 19.*) ;; *) die "$clang is clang $clang_ver; need 19.x (clang 14 knows CUDA <= 11.5, §1.3)";; esac

# ---- 2. the CUDA 12.9 wheels ----------------------------------------------------------------------------------
venv="$prefix/venv"
if [ ! -x "$venv/bin/python" ]; then
  say "venv $venv"
  mkdir -p "$prefix"
  python3 -m venv "$venv" || die "python3 -m venv failed (apt-get install python3-venv)"
fi
site="$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
N="$site/nvidia"
have_wheels() {
  [ -x "$N/cuda_nvcc/bin/ptxas" ] && [ -f "$N/cuda_nvcc/nvvm/libdevice/libdevice.10.bc" ] &&
    [ -f "$N/cuda_runtime/lib/libcudart.so.12" ] && [ -f "$N/cuda_runtime/include/cuda_runtime.h" ] &&
    [ -d "$N/cuda_cccl/include/cub" ]
}
if ! have_wheels; then
  say "pip install ${wheels[*]} ($wheel_ver; ~47 MB download)"
  specs=(); for w in "${wheels[@]}"; do specs+=("$w==$wheel_ver"); done
  "$venv/bin/pip" install -q --disable-pip-version-check "${specs[@]}"
  have_wheels || die "the wheels installed but $N lacks ptxas / libdevice / libcudart.so.12 / cub"
  rm -f "$stamp"
fi
ptxas_ver="$("$N/cuda_nvcc/bin/ptxas" --version | sed -n 's/.*release \([0-9.]*\), V\([0-9.]*\).*/\2/p')"
case "$ptxas_ver" in 12.*) ;; *) die "ptxas in the venv is '$ptxas_ver', not 12.x";; esac

# ---- 3. CUDA_HOME of symlinks + shims ---------------------------------------------------------------------------
cu="$prefix/cuda"
[ -x "$sys_cuda/bin/fatbinary" ] || die "$sys_cuda/bin/fatbinary is missing (the CUDA 13 toolkit provides it)"
link() { # link TARGET LINKNAME: (re)create only when different
  [ "$(readlink "$2" 2>/dev/null)" = "$1" ] || ln -sfn "$1" "$2"
}
if [ ! -f "$stamp" ]; then say "assembling $cu"; fi
mkdir -p "$cu/bin" "$cu/include" "$cu/lib64" "$cu/nvvm/libdevice"
link "$N/cuda_nvcc/bin/ptxas" "$cu/bin/ptxas"
link "$N/cuda_nvcc/nvvm/libdevice/libdevice.10.bc" "$cu/nvvm/libdevice/libdevice.10.bc"
for d in cuda_runtime cuda_nvcc cuda_cccl; do
  for f in "$N/$d/include/"*; do
    case "${f##*/}" in __init__.py|__pycache__) ;; *) link "$f" "$cu/include/${f##*/}";; esac
  done
done
for f in "$N/cuda_runtime/lib/"*; do
  case "${f##*/}" in __init__.py|__pycache__) ;; *) link "$f" "$cu/lib64/${f##*/}";; esac
done
link libcudart.so.12 "$cu/lib64/libcudart.so"
# clang looks for version.txt / version.json only to guess the version; the nvcc shim answers CMake.
full_ver="$(sed -n 's/^Version: //p' "$site"/nvidia_cuda_runtime_cu12-*.dist-info/METADATA 2>/dev/null | head -1)"
full_ver="${full_ver:-12.9.0}"
nvcc_ver="$(sed -n 's/^Version: //p' "$site"/nvidia_cuda_nvcc_cu12-*.dist-info/METADATA 2>/dev/null | head -1)"
nvcc_ver="${nvcc_ver:-$full_ver}"
write_if_changed() { # write_if_changed FILE (content on stdin), keeps mtime when equal
  local tmp; tmp="$(mktemp)"; cat >"$tmp"
  if cmp -s "$tmp" "$1"; then rm -f "$tmp"; else mv "$tmp" "$1"; fi
  chmod 755 "$1"
}
write_if_changed "$cu/bin/fatbinary" <<EOF
#!/bin/sh
# clang 19 calls fatbinary with the pre-CUDA-13 syntax --image=profile=sm_70,file=X; CUDA 13's fatbinary
# takes --image3=kind=elf|ptx,sm=70,file=X (and still accepts sm_70). Written by scripts/cuda12-toolchain.sh.
for a; do case \$a in
  --image=profile=sm_*)      s=\${a#*sm_};      set -- "\$@" "--image3=kind=elf,sm=\${s%%,*},file=\${a#*,file=}";;
  --image=profile=compute_*) s=\${a#*compute_}; set -- "\$@" "--image3=kind=ptx,sm=\${s%%,*},file=\${a#*,file=}";;
  *) set -- "\$@" "\$a";; esac; shift; done
exec "$sys_cuda/bin/fatbinary" "\$@"
EOF
write_if_changed "$cu/bin/nvcc" <<EOF
#!/bin/sh
# Not a compiler: CMake runs "nvcc --version" under CUDAToolkit_ROOT to learn the toolkit version when clang is
# the CUDA compiler. Written by scripts/cuda12-toolchain.sh.
if [ "\$1" = --version ]; then
  echo "nvcc: NVIDIA (R) Cuda compiler driver"
  echo "Cuda compilation tools, release ${nvcc_ver%.*}, V$nvcc_ver"
  exit 0
fi
echo "nvcc shim (scripts/cuda12-toolchain.sh): only --version is supported; the compiler is clang++-19" >&2
exit 1
EOF

# ---- 4. NCCL for compile/link only ------------------------------------------------------------------------------
nccl="$prefix/nccl"
sys_nccl_h="$(ls "$sys_cuda/include/nccl.h" 2>/dev/null || true)"
sys_nccl_so="$(ls "$sys_cuda"/lib64/libnccl.so.2 "$sys_cuda"/lib/libnccl.so.2 2>/dev/null | head -1 || true)"
[ -n "$sys_nccl_h" ] && [ -n "$sys_nccl_so" ] || die "no nccl.h / libnccl.so.2 under $sys_cuda to link against"
mkdir -p "$nccl/include" "$nccl/lib"
link "$sys_nccl_h" "$nccl/include/nccl.h"
link "$sys_nccl_so" "$nccl/lib/libnccl.so.2"
link libnccl.so.2 "$nccl/lib/libnccl.so"

# ---- 5. smoke test (once): a kernel compiles to sm_70 SASS + compute_70 PTX -------------------------------------
if [ ! -f "$stamp" ]; then
  say "smoke test: clang++-19 -x cuda --cuda-gpu-arch=sm_70"
  t="$(mktemp -d)"; trap 'rm -rf "$t"' EXIT
  printf '#include <cuda_runtime.h>\n#include <cuda_fp16.h>\n__global__ void k(__half* x){ x[threadIdx.x] = __hadd(x[threadIdx.x], x[0]); }\nint main(){ k<<<1,32>>>(nullptr); return cudaGetLastError() == cudaSuccess ? 0 : 1; }\n' >"$t/k.cu"
  "$clang" -x cuda --cuda-path="$cu" --cuda-gpu-arch=sm_70 -O2 -Wno-unknown-cuda-version \
    -Xcuda-ptxas -v -c "$t/k.cu" -o "$t/k.o" 2>"$t/log" || { cat "$t/log" >&2; die "smoke compile failed"; }
  grep -q "Compiling entry function '_Z1kP6__half' for 'sm_70'" "$t/log" || { cat "$t/log" >&2; die "no sm_70 ptxas report"; }
  g++ "$t/k.o" -L"$cu/lib64" -lcudart -Wl,-rpath,"$cu/lib64" -o "$t/k" || die "smoke link failed"
  touch "$stamp"
else
  say "already assembled; checked $prefix"
fi

cat >"$prefix/env.sh" <<EOF
# Written by scripts/cuda12-toolchain.sh: source it, then cmake --preset ci-volta-clang
export NINFER_CUDA12_HOME="$cu"
export NINFER_NCCL_ROOT="$nccl"
export NINFER_CUDA12_CLANG="$clang"
EOF

cat <<EOF
== cuda12-toolchain: ready ($prefix)
   clang $clang_ver ($clang), ptxas $ptxas_ver, cudart $full_ver, NCCL (link only) ${sys_nccl_so}
   preset:   source $prefix/env.sh && cmake --preset ci-volta-clang
   or by hand (CMake variables):
     -DNINFER_CUDA=ON -DCMAKE_CUDA_COMPILER=$clang -DCUDAToolkit_ROOT=$cu
     -DCMAKE_CUDA_ARCHITECTURES=70 -DNINFER_NCCL_ROOT=$nccl
EOF
