// Owns the description of the compute devices the process can see (CUDA GPUs), for the memory planner.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ninfer {

struct DeviceInfo {
  int index = 0;
  std::string name;
  int cc_major = 0, cc_minor = 0;  // compute capability
  uint64_t total_bytes = 0;
  uint64_t free_bytes = 0;  // cudaMemGetInfo at probe time
  int multiprocessors = 0;
};

struct DeviceProbe {
  bool cuda_built = false;    // this binary contains the CUDA kernels library
  std::string runtime;        // e.g. "CUDA runtime 13.0, driver 13.0, NCCL 2.28.3"
  std::string unavailable;    // why no device is usable (no driver, no GPU, not built); empty when some are
  std::vector<DeviceInfo> devices;
};

// Never throws for "no GPU here": that is reported in `unavailable`. Throws Error(kInternal) when the
// CUDA runtime fails in an unexpected way after a device was found.
DeviceProbe probe_devices();

std::string describe(const DeviceProbe& probe);  // one line per device, or the reason there is none

}  // namespace ninfer
