#include "compression/values.h"
#include "core/simd.h"

#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
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

// The fixed-order reductions (compression/values.h) that the GPU kernels
// reproduce: each case is decided by where a rounding happens, worked out by
// hand, so a different order gives a different answer.
TEST_CASE("DecodeTo writes each value's Get, bit for bit, for all 65536 halves and bfloat16s and for int8") {
  for (ValueType type : {ValueType::kF16, ValueType::kBF16}) {
    PackedValues v;
    v.coding.type = type;
    v.count = 65536;
    for (std::uint32_t h = 0; h < 65536; ++h) {
      v.payload.push_back(static_cast<std::uint8_t>(h & 0xFF));
      v.payload.push_back(static_cast<std::uint8_t>(h >> 8));
    }
    std::vector<float> out(v.count, 7.0f);
    v.DecodeTo(out);
    std::size_t same = 0;
    for (std::size_t i = 0; i < v.count; ++i) {
      const float g = v.Get(i);
      same += std::memcmp(&g, &out[i], 4) == 0;
    }
    CHECK(same == v.count);
  }
  ValueCoding int8;
  int8.type = ValueType::kInt8;
  int8.block = 4;
  const std::vector<float> x = {1.5f, -3.0f, 0.25f, 100.0f, -7.0f, 0.0f};
  const PackedValues v = PackValues(x, {}, int8, 0);
  std::vector<float> out(x.size());
  v.DecodeTo(out);
  for (std::size_t i = 0; i < x.size(); ++i) CHECK(out[i] == v.Get(i));
}

TEST_CASE("The one-scale reductions add in their documented order") {
  const double two53 = 0x1p53, two54 = 0x1p54;
  SUBCASE("pairwise over the block totals") {
    std::vector<double> s = {1, 2, 3};
    CHECK(PairwiseSum(s) == 6);  // [3, 3] -> 6, the odd 3 carried up
    s = {two53, 1, 1, 1};
    CHECK(PairwiseSum(s) == two53 + 2);  // [2^53 + 1 -> 2^53, 2] -> 2^53 + 2; left to right gives 2^53
    s = {};
    CHECK(PairwiseSum(s) == 0);
  }
  SUBCASE("AbsSum keeps each lane in float and adds the lanes in double") {
    std::vector<float> a(1024, 0.0f);
    a[0] = 0x1p24f;
    a[16] = 1.0f;  // lane 0 again: 2^24 + 1 rounds to 2^24 in float
    CHECK(AbsSum(a) == 0x1p24);
    a[16] = 0.0f;
    a[1] = -1.0f;  // lane 1: the lanes meet in double, 2^24 + 1 exactly
    CHECK(AbsSum(a) == 0x1p24 + 1);
    // Small integers: every order is exact, the total is the plain sum.
    std::vector<float> b(5000);
    double want = 0;
    for (std::size_t i = 0; i < b.size(); ++i) {
      b[i] = static_cast<float>(static_cast<int>(i % 7) - 3);
      want += std::fabs(b[i]);
    }
    CHECK(AbsSum(b) == want);
    CHECK(AbsSum(std::vector<float>{}) == 0);
  }
  SUBCASE("SquareSum adds exact squares in double lanes, blocks pairwise") {
    std::vector<float> a(1024, 0.0f);
    a[0] = 0x1p27f;  // square 2^54
    a[16] = 1.0f;
    a[32] = 1.0f;  // lane 0: 2^54 + 1 -> 2^54, twice
    CHECK(SquareSum(a) == two54);
    std::vector<float> b(4096, 0.0f);
    b[0] = 0x1p27f;
    b[1024] = b[2048] = b[3072] = 1.0f;  // blocks [2^54, 1, 1, 1] -> [2^54, 2] -> 2^54 + 2
    CHECK(SquareSum(b) == two54 + 2);
    CHECK(SquareSum(std::vector<float>{3.0f, -4.0f}) == 25);
  }
}

TEST_CASE("int8 codes a NaN as -127 at every SIMD level, as the GPU kernel does") {
  std::vector<float> x(40, 0.5f);
  x[3] = std::nanf("");
  x[20] = std::nanf("");  // in the last full 16-wide step
  x[37] = std::nanf("");  // in the scalar tail of a 16-wide loop
  const ValueCoding int8{ValueType::kInt8, 40, 0};
  for (SimdLevel level : {SimdLevel::kGeneric, SimdLevel::kAvx2, SimdLevel::kAvx512}) {
    const SimdLevel before = CapSimd(level);
    PackedValues pv = PackValues(x, {}, int8, 1);
    CapSimd(before);
    CHECK(static_cast<std::int8_t>(pv.payload[3]) == -127);
    CHECK(static_cast<std::int8_t>(pv.payload[20]) == -127);
    CHECK(static_cast<std::int8_t>(pv.payload[37]) == -127);
    CHECK(pv.scales[0] == 0.5f / 127.0f);  // the maximum ignores the NaN
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
