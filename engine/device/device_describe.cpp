#include <fmt/format.h>

#include "engine/device/device_info.h"

namespace ninfer {

std::string describe(const DeviceProbe& p) {
  if (p.devices.empty()) return fmt::format("no CUDA device: {}", p.unavailable);
  std::string out = p.runtime;
  for (const auto& d : p.devices)
    out += fmt::format("\n  cuda:{} {} sm_{}{} {} SMs, {:.1f} GiB total, {:.1f} GiB free", d.index, d.name, d.cc_major,
                       d.cc_minor, d.multiprocessors, d.total_bytes / double(1ull << 30),
                       d.free_bytes / double(1ull << 30));
  return out;
}

}  // namespace ninfer
