// Owns the CUDA/NCCL error-check macros: every runtime call goes through one of them.
#pragma once

#include <cuda_runtime.h>
#if NINFER_WITH_NCCL
#include <nccl.h>
#endif

#include "engine/core/error.h"

#define NINFER_CUDA_CHECK(call)                                                                        \
  do {                                                                                                 \
    cudaError_t ninfer_err_ = (call);                                                                  \
    if (ninfer_err_ != cudaSuccess)                                                                    \
      ::ninfer::fail(::ninfer::ErrorKind::kInternal, "CUDA error {} ({}) in {} at {}:{}",              \
                     cudaGetErrorName(ninfer_err_), cudaGetErrorString(ninfer_err_), #call, __FILE__, \
                     __LINE__);                                                                        \
  } while (0)

#if NINFER_WITH_NCCL
#define NINFER_NCCL_CHECK(call)                                                                   \
  do {                                                                                            \
    ncclResult_t ninfer_res_ = (call);                                                            \
    if (ninfer_res_ != ncclSuccess)                                                               \
      ::ninfer::fail(::ninfer::ErrorKind::kInternal, "NCCL error {} in {} at {}:{}",              \
                     ncclGetErrorString(ninfer_res_), #call, __FILE__, __LINE__);                 \
  } while (0)
#endif
