// The device probe answers in every build: devices with sane properties, or the reason there are none.
#include <gtest/gtest.h>

#include "engine/device/device_info.h"

namespace ninfer {
namespace {

TEST(DeviceProbe, ReportsDevicesOrWhyThereAreNone) {
  DeviceProbe p = probe_devices();
#ifdef NINFER_WITH_CUDA
  EXPECT_TRUE(p.cuda_built);
  EXPECT_NE(p.runtime.find("CUDA runtime"), std::string::npos) << p.runtime;
  EXPECT_NE(p.runtime.find("NCCL"), std::string::npos) << p.runtime;
#else
  EXPECT_FALSE(p.cuda_built);
  EXPECT_NE(p.unavailable.find("without CUDA"), std::string::npos) << p.unavailable;
#endif
  if (p.devices.empty()) {
    EXPECT_FALSE(p.unavailable.empty());
    EXPECT_NE(describe(p).find("no CUDA device"), std::string::npos);
  }
  for (const auto& d : p.devices) {
    EXPECT_FALSE(d.name.empty());
    EXPECT_GE(d.cc_major, 7);
    EXPECT_GT(d.total_bytes, 0u);
    EXPECT_LE(d.free_bytes, d.total_bytes);
    EXPECT_GT(d.multiprocessors, 0);
    EXPECT_NE(describe(p).find(d.name), std::string::npos);
  }
}

}  // namespace
}  // namespace ninfer
