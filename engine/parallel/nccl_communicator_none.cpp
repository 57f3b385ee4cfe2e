// The NCCL entries of a build without NCCL: without CUDA, or on Windows, where NCCL has no build (engine/CMakeLists.txt
// picks this file or nccl_communicator.cpp).
#include "engine/parallel/nccl_communicator.h"

#include "engine/core/error.h"

namespace ninfer {

bool nccl_built() { return false; }

std::unique_ptr<NcclGroup> make_nccl_group(const std::vector<int>&) {
  fail(ErrorKind::kUnsupported,
       "this ninfer build has no NCCL (tensor parallelism on GPUs needs a Linux CUDA build with NCCL: "
       "-DNINFER_CUDA=ON, e.g. the linux-cuda preset; Windows builds have none, docs/windows.md)");
}

}  // namespace ninfer
