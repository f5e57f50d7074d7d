#include "compression/values.h"

#include <doctest/doctest.h>

#include <cmath>
#include <vector>

namespace murmur::compression {
namespace {

// Reference encodings from the IEEE 754 binary16 and bfloat16 definitions.
TEST_CASE("fp16 and bf16 conversions match known encodings") {
  CHECK(FloatToHalf(1.0f) == 0x3C00);
  CHECK(FloatToHalf(-2.0f) == 0xC000);
  CHECK(FloatToHalf(65504.0f) == 0x7BFF);  // largest finite half
  CHECK(FloatToHalf(65520.0f) == 0x7C00);  // halfway to 65536: ties to even -> infinity
  CHECK(FloatToHalf(0x1p-24f) == 0x0001);  // smallest subnormal
  CHECK(FloatToHalf(0x1p-25f) == 0x0000);  // halfway to the smallest subnormal: ties to even -> 0
  CHECK(FloatToHalf(0x1p-14f) == 0x0400);  // smallest normal
  CHECK(FloatToHalf(0.1f) == 0x2E66);
  CHECK(FloatToHalf(1.0f + 0x1p-11f) == 0x3C00);             // tie, even below
  CHECK(FloatToHalf(1.0f + 0x1p-11f + 0x1p-10f) == 0x3C02);  // tie, even above
  CHECK(HalfToFloat(0x0001) == 0x1p-24f);
  CHECK(HalfToFloat(0x7BFF) == 65504.0f);
  CHECK(HalfToFloat(0x3555) == 0.333251953125f);
  CHECK(FloatToBf16(1.0f) == 0x3F80);
  CHECK(FloatToBf16(3.140625f) == 0x4049);
  CHECK(FloatToBf16(1.0f + 0x1p-8f) == 0x3F80);            // tie to even
  CHECK(FloatToBf16(1.0f + 0x1p-8f + 0x1p-7f) == 0x3F82);  // tie to even, upwards
  CHECK(Bf16ToFloat(0xC0A0) == -5.0f);
  // Every finite half survives half -> float -> half.
  for (std::uint32_t h = 0; h < 0x10000; ++h) {
    if ((h & 0x7C00) == 0x7C00) continue;
    CAPTURE(h);
    REQUIRE(FloatToHalf(HalfToFloat(static_cast<std::uint16_t>(h))) == h);
  }
}

TEST_CASE("Packed sizes follow the bits per value") {
  CHECK(ValueCoding{ValueType::kF32, 0, 0}.EncodedBytes(10) == 40);
  CHECK(ValueCoding{ValueType::kF16, 0, 0}.EncodedBytes(10) == 20);
  CHECK(ValueCoding{ValueType::kInt8, 4, 0}.EncodedBytes(10) == 10 + 3 * 4);
  CHECK(ValueCoding{ValueType::kSign, 0, 0}.EncodedBytes(10) == 2 + 4);
  CHECK(ValueCoding{ValueType::kTernary, 0, 0}.EncodedBytes(10) == 3 + 4);
  CHECK(ValueCoding{ValueType::kQsgd, 0, 16}.BitsPerValue() == 6);  // sign + 5 bits for 0..16
  CHECK(ValueCoding{ValueType::kQsgd, 0, 15}.BitsPerValue() == 5);
}

TEST_CASE("Sign packing sends the signs and ||x||_1 / d") {
  std::vector<float> x = {1, -2, 3, -4, 0.5f, -0.5f, 2, 1, -1};
  PackedValues pv = PackValues(x, {}, {ValueType::kSign, 0, 0}, 0);
  float l1 = 15.0f / 9.0f;
  CHECK(pv.scales[0] == doctest::Approx(l1));
  for (std::size_t i = 0; i < x.size(); ++i) CHECK(pv.Get(i) == (x[i] < 0 ? -pv.scales[0] : pv.scales[0]));
}

}  // namespace
}  // namespace murmur::compression
