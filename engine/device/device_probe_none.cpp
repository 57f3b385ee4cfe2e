// Built only without the CUDA kernels library (NINFER_CUDA=OFF or no nvcc).
#include "engine/device/device_info.h"

namespace ninfer {

DeviceProbe probe_devices() {
  DeviceProbe p;
  p.cuda_built = false;
  p.unavailable = "this binary was built without CUDA (NINFER_CUDA=OFF or no nvcc at configure time)";
  return p;
}

}  // namespace ninfer
