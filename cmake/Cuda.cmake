# Decides whether the CUDA kernels library is built (NINFER_CUDA = AUTO | ON | OFF).
#
# Two CUDA compilers are supported (docs/gpu.md):
# - NVIDIA nvcc (CUDA 13 for sm_75+, a real CUDA 12.x for sm_70; also MSVC + nvcc on Windows);
# - Clang 19 over the CUDA 12.9 PyPI wheels that scripts/cuda12-toolchain.sh assembles (sm_70 on a machine whose
#   system toolkit is CUDA 13). CUDAToolkit_ROOT must then point at that assembled CUDA_HOME.
# Flags that only one of them understands are guarded with $<COMPILE_LANG_AND_ID:CUDA,NVIDIA|Clang>.
include(CheckLanguage)
set(NINFER_WITH_CUDA OFF)
string(TOUPPER "${NINFER_CUDA}" _ninfer_cuda)

# Per-kernel resource report (registers, spills, static smem, stack): ptxas -v is added to every CUDA compile and a
# launcher (scripts/cuda-ptxas-log.sh) keeps each object's ptxas output in <object>.ptxas.log, which
# scripts/cuda-resources.sh turns into <build>/cuda-resources.md and checks. Needs bash: off by default on Windows.
if(WIN32)
  set(_ninfer_res_default OFF)
else()
  set(_ninfer_res_default ON)
endif()
# NCCL (CUDA tensor parallelism, engine/parallel/nccl_communicator.cpp): Linux only, NCCL has no Windows build.
if(WIN32)
  option(NINFER_NCCL "CUDA tensor parallelism over NCCL (with the CUDA backend)" OFF)
else()
  option(NINFER_NCCL "CUDA tensor parallelism over NCCL (with the CUDA backend)" ON)
endif()
option(NINFER_CUDA_RESOURCE_REPORT "Keep ptxas -v output per CUDA object for scripts/cuda-resources.sh" ${_ninfer_res_default})

if(_ninfer_cuda STREQUAL "ON" OR _ninfer_cuda STREQUAL "AUTO")
  if(NOT CMAKE_CUDA_COMPILER)
    check_language(CUDA)
  endif()
  if(CMAKE_CUDA_COMPILER)
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES OR CMAKE_CUDA_ARCHITECTURES STREQUAL "")
      set(CMAKE_CUDA_ARCHITECTURES 75)
    endif()
    # Clang as the CUDA compiler (preset ci-volta-clang): it needs the CUDA 12 toolkit root before
    # enable_language. Fall back to where scripts/cuda12-toolchain.sh puts it by default.
    get_filename_component(_ninfer_cuda_cc_name "${CMAKE_CUDA_COMPILER}" NAME)
    if(_ninfer_cuda_cc_name MATCHES "clang" AND NOT CUDAToolkit_ROOT AND NOT DEFINED ENV{CUDAToolkit_ROOT})
      if(DEFINED ENV{XDG_CACHE_HOME} AND NOT "$ENV{XDG_CACHE_HOME}" STREQUAL "")
        set(_ninfer_cu12 "$ENV{XDG_CACHE_HOME}/ninfer/cuda12/cuda")
      else()
        set(_ninfer_cu12 "$ENV{HOME}/.cache/ninfer/cuda12/cuda")
      endif()
      if(EXISTS "${_ninfer_cu12}/bin/nvcc")
        set(CUDAToolkit_ROOT "${_ninfer_cu12}" CACHE PATH "CUDA toolkit root (the CUDA 12 wheels assembled by scripts/cuda12-toolchain.sh)" FORCE)
      else()
        message(FATAL_ERROR "ninfer: ${CMAKE_CUDA_COMPILER} as the CUDA compiler needs a CUDA 12 toolkit root: run "
                            "scripts/cuda12-toolchain.sh, then `source <prefix>/env.sh` (sets NINFER_CUDA12_HOME) "
                            "or pass -DCUDAToolkit_ROOT=<prefix>/cuda")
      endif()
    endif()
    if(NINFER_CUDA_RESOURCE_REPORT)
      # Prepended to any launcher the user set (ccache etc.); the launcher execs the rest of the command line.
      set(_ninfer_launcher "${PROJECT_SOURCE_DIR}/scripts/cuda-ptxas-log.sh")
      if(NOT CMAKE_CUDA_COMPILER_LAUNCHER)
        set(CMAKE_CUDA_COMPILER_LAUNCHER "${_ninfer_launcher}")
      elseif(NOT CMAKE_CUDA_COMPILER_LAUNCHER MATCHES "cuda-ptxas-log")
        list(PREPEND CMAKE_CUDA_COMPILER_LAUNCHER "${_ninfer_launcher}")
      endif()
    endif()
    enable_language(CUDA)
    set(CMAKE_CUDA_STANDARD 17)  # CMake 3.25 knows no CUDA20 dialect for nvcc; kernels need only C++17
    set(CMAKE_CUDA_STANDARD_REQUIRED ON)
    find_package(CUDAToolkit REQUIRED)
    set(NINFER_WITH_CUDA ON)
    # clang 19 officially knows CUDA <= 12.5 and warns about 12.9 on every compile.
    add_compile_options($<$<COMPILE_LANG_AND_ID:CUDA,Clang>:-Wno-unknown-cuda-version>)
    if(NINFER_CUDA_RESOURCE_REPORT)
      add_compile_options($<$<COMPILE_LANG_AND_ID:CUDA,NVIDIA>:-Xptxas=-v>
                          "$<$<COMPILE_LANG_AND_ID:CUDA,Clang>:SHELL:-Xcuda-ptxas -v>")
    endif()
    message(STATUS "ninfer: CUDA ${CMAKE_CUDA_COMPILER_ID} ${CMAKE_CUDA_COMPILER_VERSION}, toolkit "
                   "${CUDAToolkit_VERSION} (${CUDAToolkit_BIN_DIR}), architectures ${CMAKE_CUDA_ARCHITECTURES}, "
                   "resource report ${NINFER_CUDA_RESOURCE_REPORT}")
  elseif(_ninfer_cuda STREQUAL "ON")
    message(FATAL_ERROR "NINFER_CUDA=ON but no CUDA compiler was found (set CMAKE_CUDA_COMPILER or put nvcc on PATH)")
  else()
    message(STATUS "ninfer: no CUDA compiler found, building the CPU backend only")
  endif()
elseif(NOT _ninfer_cuda STREQUAL "OFF")
  message(FATAL_ERROR "NINFER_CUDA must be AUTO, ON or OFF (got '${NINFER_CUDA}')")
endif()
