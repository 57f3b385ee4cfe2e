// The CUDA backend's memory: zero-filled allocation, copies in every direction (contiguous and strided), zero of a
// strided view, the caching arena's reuse, and a Buffer outliving nothing it needs.
#include <numeric>

#include "tests/cuda/cuda_test_support.h"

namespace ninfer::testing {
namespace {

TEST(CudaMemory, AllocIsZeroFilled) {
  NINFER_REQUIRE_CUDA();
  DeviceTensor d = device_alloc(DType::kF32, {3, 37});
  for (float v : to_host_f32(d.t)) EXPECT_EQ(v, 0.0f);
}

TEST(CudaMemory, CopyRoundTripsEveryDtype) {
  NINFER_REQUIRE_CUDA();
  std::mt19937 rng(1);
  for (DType dt : {DType::kF32, DType::kBF16, DType::kF16}) {
    HostTensor h = random_tensor({5, 19}, rng, -3, 3, dt);
    DeviceTensor d = to_device(h);
    DeviceTensor d2 = device_alloc(dt, {5, 19});
    gpu().copy(d2.t, d.t);  // device -> device
    EXPECT_EQ(to_host_f32(d2.t), h.values) << dtype_name(dt);
  }
}

TEST(CudaMemory, StridedCopiesAndZero) {
  NINFER_REQUIRE_CUDA();
  std::mt19937 rng(2);
  HostTensor h = random_tensor({4, 6}, rng);
  // A device [4, 6] view with row stride 10 (the forward's per-head halves are such views).
  DeviceTensor wide = device_alloc(DType::kF32, {4, 6}, {10, 1});
  gpu().copy(wide.t, h.view());  // host contiguous -> device strided
  EXPECT_EQ(to_host_f32(to_device(h).t), h.values);
  std::vector<float> back(4 * 12, -1.0f);  // host strided (row stride 12) <- device strided
  gpu().copy(Tensor::strided(back.data(), DType::kF32, {4, 6}, {12, 1}), wide.t);
  gpu().synchronize();
  for (int r = 0; r < 4; ++r)
    for (int c = 0; c < 12; ++c)
      EXPECT_EQ(back[static_cast<size_t>(r * 12 + c)], c < 6 ? h.values[static_cast<size_t>(r * 6 + c)] : -1.0f);
  gpu().zero(wide.t);
  gpu().copy(Tensor::strided(back.data(), DType::kF32, {4, 6}, {12, 1}), wide.t);
  gpu().synchronize();
  for (int r = 0; r < 4; ++r)
    for (int c = 0; c < 6; ++c) EXPECT_EQ(back[static_cast<size_t>(r * 12 + c)], 0.0f);
}

TEST(CudaMemory, ArenaReusesFreedBlocksZeroed) {
  NINFER_REQUIRE_CUDA();
  void* first = nullptr;
  {
    DeviceTensor d = device_alloc(DType::kF32, {1000});
    first = d.t.data;
    std::vector<float> ones(1000, 1.0f);
    gpu().copy(d.t, Tensor::make(ones.data(), DType::kF32, {1000}));
  }
  DeviceTensor again = device_alloc(DType::kF32, {1000});
  EXPECT_EQ(again.t.data, first) << "a freed block of the same size class is reused";
  for (float v : to_host_f32(again.t)) EXPECT_EQ(v, 0.0f);
}

TEST(CudaMemory, WrongDeviceIsRefused) {
  NINFER_REQUIRE_CUDA();
  std::vector<float> x(8, 1.0f), w(8, 1.0f);
  DeviceTensor y = device_alloc(DType::kF32, {1, 8});
  try {
    gpu().rms_norm(y.t, Tensor::make(x.data(), DType::kF32, {1, 8}), Tensor::make(w.data(), DType::kF32, {8}), 1e-6f, 0.0f);
    FAIL() << "a host tensor given to a CUDA op must be refused";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("rms_norm"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace ninfer::testing
