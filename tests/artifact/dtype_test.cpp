#include <gtest/gtest.h>

#include "engine/artifact/dtype.h"

namespace ninfer {
namespace {

TEST(DType, NamesRoundTrip) {
  for (DType d : {DType::kF32, DType::kF16, DType::kBF16, DType::kI8, DType::kI32, DType::kF8E4M3, DType::kNVFP4}) {
    auto back = dtype_from_name(dtype_name(d));
    ASSERT_TRUE(back.has_value()) << dtype_name(d);
    EXPECT_EQ(*back, d);
  }
  EXPECT_FALSE(dtype_from_name("f64").has_value());
}

TEST(DType, PlainStorageBytes) {
  std::vector<int64_t> shape{3, 5};
  EXPECT_EQ(*tensor_storage_bytes(DType::kF32, shape), 60u);
  EXPECT_EQ(*tensor_storage_bytes(DType::kBF16, shape), 30u);
  EXPECT_EQ(*tensor_storage_bytes(DType::kF8E4M3, shape), 15u);
  std::vector<int64_t> scalar{};
  EXPECT_EQ(*tensor_storage_bytes(DType::kF32, scalar), 4u);
  std::vector<int64_t> negative{2, -1};
  EXPECT_FALSE(tensor_storage_bytes(DType::kF32, negative).has_value());
  std::vector<int64_t> huge{int64_t(1) << 40, int64_t(1) << 40};
  EXPECT_FALSE(tensor_storage_bytes(DType::kF32, huge).has_value());
}

TEST(DType, Nvfp4LayoutMatchesTheDocumentedFormula) {
  // [N=5, K=48]: codes 5*24 = 120 bytes -> padded to 128; scales 5*3 = 15 bytes at 128 -> 143 -> 144;
  // trailer 16 bytes -> 160.
  std::vector<int64_t> shape{5, 48};
  auto l = nvfp4_layout(shape);
  ASSERT_TRUE(l.has_value());
  EXPECT_EQ(l->rows, 5u);
  EXPECT_EQ(l->cols, 48u);
  EXPECT_EQ(l->scales_offset, 128u);
  EXPECT_EQ(l->tensor_scale_offset, 144u);
  EXPECT_EQ(l->total_bytes, 160u);
  EXPECT_EQ(*tensor_storage_bytes(DType::kNVFP4, shape), 160u);
  std::vector<int64_t> bad_k{4, 40};
  EXPECT_FALSE(nvfp4_layout(bad_k).has_value());
  std::vector<int64_t> rank0{};
  EXPECT_FALSE(nvfp4_layout(rank0).has_value());
}

}  // namespace
}  // namespace ninfer
