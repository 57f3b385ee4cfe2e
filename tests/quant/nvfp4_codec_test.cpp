// E2M1 / E4M3 codec tests and quantize/dequantize round-trip bounds, independent of the fixtures.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "engine/artifact/dtype.h"
#include "engine/core/error.h"
#include "engine/quant/nvfp4.h"

namespace ninfer {
namespace {

TEST(Nvfp4Codec, AllSixteenE2M1CodesDecode) {
  const std::array<float, 16> expected = {0, 0.5, 1, 1.5, 2, 3, 4, 6, -0.0f, -0.5, -1, -1.5, -2, -3, -4, -6};
  for (int c = 0; c < 16; ++c) {
    EXPECT_EQ(e2m1_decode(static_cast<uint8_t>(c)), expected[c]) << "code " << c;
    EXPECT_EQ(std::signbit(e2m1_decode(static_cast<uint8_t>(c))), c >= 8) << "code " << c;
    // Every value re-encodes to its own code (negative zero encodes as +0: the sign follows x < 0).
    if (c != 8) {
      EXPECT_EQ(e2m1_encode(expected[c]), c) << "code " << c;
    }
  }
  EXPECT_EQ(e2m1_encode(-0.0f), 0);
}

TEST(Nvfp4Codec, E2M1TiesRoundToEven) {
  // Each tie sits between magnitude indices `lower` and lower + 1; the even mantissa wins
  // (0, 1, 2, 4 = indices 0, 2, 4, 6), and one float away from the tie the nearer neighbour wins.
  const std::array<std::pair<float, int>, 7> ties = {
      {{0.25f, 0}, {0.75f, 1}, {1.25f, 2}, {1.75f, 3}, {2.5f, 4}, {3.5f, 5}, {5.0f, 6}}};
  for (const auto& [x, lower] : ties) {
    const int even = lower % 2 == 0 ? lower : lower + 1;
    EXPECT_EQ(e2m1_encode(x), even) << x;
    EXPECT_EQ(e2m1_encode(-x), even | 8) << -x;
    EXPECT_EQ(e2m1_encode(std::nextafter(x, 100.0f)), lower + 1) << x;
    EXPECT_EQ(e2m1_encode(std::nextafter(x, 0.0f)), lower) << x;
    EXPECT_EQ(e2m1_encode(-std::nextafter(x, 100.0f)), (lower + 1) | 8) << x;
  }
  EXPECT_EQ(e2m1_encode(0.1f), 0);
  EXPECT_EQ(e2m1_encode(-0.1f), 8);  // ModelOpt: sign bit from x < 0
  EXPECT_EQ(e2m1_encode(1e30f), 7);  // saturates
  EXPECT_EQ(e2m1_encode(-7.0f), 15);
}

float e4m3_reference(int c) {  // straight from the definition: s eeee mmm, bias 7
  const int s = c >> 7, e = (c >> 3) & 15, m = c & 7;
  if (e == 15 && m == 7) return NAN;
  const double v = e == 0 ? m / 8.0 * std::pow(2.0, -6) : (1.0 + m / 8.0) * std::pow(2.0, e - 7);
  return static_cast<float>(s ? -v : v);
}

TEST(Nvfp4Codec, AllE4M3CodesDecodeAndReencode) {
  for (int c = 0; c < 256; ++c) {
    const float v = e4m3_decode(static_cast<uint8_t>(c));
    const float want = e4m3_reference(c);
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(v)) << c;
      EXPECT_EQ(e4m3_encode(v), 0x7F);
      continue;
    }
    EXPECT_EQ(v, want) << c;
    EXPECT_EQ(std::signbit(v), c >= 128) << c;
    EXPECT_EQ(e4m3_encode(v), c) << c;
  }
  EXPECT_EQ(e4m3_decode(0x7E), 448.0f);
  EXPECT_EQ(e4m3_decode(0x01), std::ldexp(1.0f, -9));
}

TEST(Nvfp4Codec, E4M3RoundsToNearestEvenAndSaturates) {
  EXPECT_EQ(e4m3_encode(1.0625f), 0x38);  // tie between 1 (m=0) and 1.125 (m=1): even
  EXPECT_EQ(e4m3_encode(1.1875f), 0x3A);  // tie between 1.125 and 1.25: even (m=2)
  EXPECT_EQ(e4m3_encode(std::ldexp(1.5f, -9)), 0x02);  // subnormal tie 1.5 -> 2
  EXPECT_EQ(e4m3_encode(std::ldexp(2.5f, -9)), 0x02);  // 2.5 -> 2
  EXPECT_EQ(e4m3_encode(std::ldexp(0.5f, -9)), 0x00);  // half the smallest subnormal -> 0
  EXPECT_EQ(e4m3_encode(std::nextafter(std::ldexp(0.5f, -9), 1.0f)), 0x01);
  EXPECT_EQ(e4m3_encode(std::ldexp(7.5f, -9)), 0x08);  // rounds up into the smallest normal
  EXPECT_EQ(e4m3_encode(432.0f), 0x7E);  // tie between 416 (m=5) and 448 (m=6): even
  EXPECT_EQ(e4m3_encode(std::nextafter(432.0f, 0.0f)), 0x7D);
  EXPECT_EQ(e4m3_encode(1000.0f), 0x7E);
  EXPECT_EQ(e4m3_encode(-1e30f), 0xFE);
  EXPECT_EQ(e4m3_encode(NAN), 0x7F);
}

std::vector<std::byte> quantize(const std::vector<float>& w, uint64_t rows, uint64_t cols) {
  const std::array<int64_t, 2> shape = {static_cast<int64_t>(rows), static_cast<int64_t>(cols)};
  std::vector<std::byte> out(nvfp4_layout(shape)->total_bytes);
  quantize_nvfp4(w.data(), rows, cols, out);
  return out;
}

TEST(Nvfp4Quantize, RoundTripErrorWithinHalfAStepOfTheBlockScale) {
  std::mt19937 rng(42);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const uint64_t rows = 33, cols = 160;
  std::vector<float> w(rows * cols);
  for (uint64_t r = 0; r < rows; ++r) {
    const float row_scale = std::exp(2.0f * normal(rng));
    for (uint64_t c = 0; c < cols; ++c) w[r * cols + c] = normal(rng) * row_scale;
  }
  const auto packed = quantize(w, rows, cols);
  const std::array<int64_t, 2> shape = {static_cast<int64_t>(rows), static_cast<int64_t>(cols)};
  const Nvfp4Layout layout = *nvfp4_layout(shape);
  std::vector<float> back(rows * cols);
  dequantize_nvfp4(packed, rows, cols, back.data());

  float scale_2;
  std::memcpy(&scale_2, packed.data() + layout.tensor_scale_offset, 4);
  for (uint64_t r = 0; r < rows; ++r) {
    for (uint64_t b = 0; b < cols / 16; ++b) {
      const float s = e4m3_decode(static_cast<uint8_t>(packed[layout.scales_offset + r * (cols / 16) + b])) * scale_2;
      for (uint64_t i = 0; i < 16; ++i) {
        const uint64_t k = r * cols + b * 16 + i;
        const float y = std::fabs(w[k]) / s;
        // Half the E2M1 spacing at y (0.25 below 2, 0.5 below 4, 1 above), plus what saturation at 6 costs
        // (the E4M3 rounding of the block scale can push y slightly past 6).
        const float half_step = y < 2.0f ? 0.25f : (y < 4.0f ? 0.5f : 1.0f);
        const float bound = (half_step + std::max(0.0f, y - 6.0f)) * s * 1.0001f;
        EXPECT_LE(std::fabs(back[k] - w[k]), bound) << "r " << r << " k " << k;
      }
    }
  }
  // Trailer: input_scale 0 and 8 zero bytes; padding between the parts is zero.
  for (uint64_t i = layout.tensor_scale_offset + 4; i < layout.total_bytes; ++i) EXPECT_EQ(packed[i], std::byte{0});
  for (uint64_t i = rows * cols / 2; i < layout.scales_offset; ++i) EXPECT_EQ(packed[i], std::byte{0});
}

TEST(Nvfp4Quantize, AllZeroTensorIsExactlyZero) {
  const std::vector<float> w(4 * 32, 0.0f);
  const auto packed = quantize(w, 4, 32);
  const Nvfp4Layout layout = *nvfp4_layout(std::array<int64_t, 2>{4, 32});
  for (uint64_t i = 0; i < 64; ++i) EXPECT_EQ(packed[i], std::byte{0});
  for (uint64_t i = 0; i < 8; ++i) EXPECT_EQ(packed[layout.scales_offset + i], std::byte{0x38});  // 1.0
  std::vector<float> back(4 * 32, 1.0f);
  dequantize_nvfp4(packed, 4, 32, back.data());
  for (float v : back) EXPECT_EQ(v, 0.0f);
}

TEST(Nvfp4Quantize, RejectsBadShapesSizesAndNonFiniteValues) {
  std::vector<float> w(2 * 32, 1.0f);
  std::vector<std::byte> out(nvfp4_layout(std::array<int64_t, 2>{2, 32})->total_bytes);
  std::vector<std::byte> short_out(out.size() - 1);
  EXPECT_THROW(quantize_nvfp4(w.data(), 2, 32, short_out), Error);
  EXPECT_THROW(quantize_nvfp4(w.data(), 8, 16, out), Error);  // 96 bytes needed, 64 given
  EXPECT_THROW(quantize_nvfp4(w.data(), 2, 24, out), Error);  // not a multiple of 16
  w[37] = NAN;
  try {
    quantize_nvfp4(w.data(), 2, 32, out);
    FAIL() << "NaN accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("[1, 5]"), std::string::npos) << e.what();
  }
  w[37] = INFINITY;
  EXPECT_THROW(quantize_nvfp4(w.data(), 2, 32, out), Error);
  std::vector<float> back(64);
  EXPECT_THROW(dequantize_nvfp4(short_out, 2, 32, back.data()), Error);
  w[37] = 1.0f;
  EXPECT_THROW(quantize_nvfp4(w.data(), 2, 32, 0.0f, out), Error);
  EXPECT_THROW(quantize_nvfp4(w.data(), 2, 32, -1.0f, out), Error);
  EXPECT_THROW(quantize_nvfp4(w.data(), 2, 32, NAN, out), Error);
  EXPECT_NO_THROW(quantize_nvfp4(w.data(), 2, 32, 1.0f / 2688.0f, out));
}

}  // namespace
}  // namespace ninfer
