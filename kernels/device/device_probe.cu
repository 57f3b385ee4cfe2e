// The CUDA device probe: device count, names, compute capability, free/total memory, NCCL version.
#include <fmt/format.h>

#include "engine/device/device_info.h"
#include "kernels/cuda_check.h"

namespace ninfer {

DeviceProbe probe_devices() {
  DeviceProbe p;
  p.cuda_built = true;
  int runtime = 0, driver = 0, nccl = 0;
  NINFER_CUDA_CHECK(cudaRuntimeGetVersion(&runtime));
  // cudaDriverGetVersion reports 0 when no driver is installed; that is not an error here.
  NINFER_CUDA_CHECK(cudaDriverGetVersion(&driver));
#if NINFER_WITH_NCCL
  NINFER_NCCL_CHECK(ncclGetVersion(&nccl));
  const std::string nccl_text = fmt::format("NCCL {}.{}.{}", nccl / 10000, (nccl % 10000) / 100, nccl % 100);
#else
  const std::string nccl_text = "no NCCL in this build";
#endif
  p.runtime = fmt::format("CUDA runtime {}.{}, driver {}, {}", runtime / 1000, (runtime % 1000) / 10,
                          driver ? fmt::format("{}.{}", driver / 1000, (driver % 1000) / 10) : std::string("none"),
                          nccl_text);
  int count = 0;
  cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    // No driver / no device / driver too old are the normal "no GPU here" answers.
    p.unavailable = fmt::format("{} ({}); {}", cudaGetErrorName(err), cudaGetErrorString(err), p.runtime);
    (void)cudaGetLastError();  // clear the sticky-free error so later calls start clean
    return p;
  }
  if (count == 0) {
    p.unavailable = "the CUDA runtime reports 0 devices; " + p.runtime;
    return p;
  }
  for (int i = 0; i < count; ++i) {
    cudaDeviceProp prop{};
    NINFER_CUDA_CHECK(cudaGetDeviceProperties(&prop, i));
    DeviceInfo d;
    d.index = i;
    d.name = prop.name;
    d.cc_major = prop.major;
    d.cc_minor = prop.minor;
    d.multiprocessors = prop.multiProcessorCount;
    size_t free_b = 0, total_b = 0;
    NINFER_CUDA_CHECK(cudaSetDevice(i));
    NINFER_CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
    d.free_bytes = free_b;
    d.total_bytes = total_b;
    p.devices.push_back(std::move(d));
  }
  return p;
}

}  // namespace ninfer
