#include "core/float16.h"

#include <bit>

namespace murmur {

namespace {
std::uint32_t Bits(float f) { return std::bit_cast<std::uint32_t>(f); }
float FromBits(std::uint32_t u) { return std::bit_cast<float>(u); }
}  // namespace

std::uint16_t FloatToHalf(float f) {
  std::uint32_t x = Bits(f);
  std::uint32_t sign = (x >> 16) & 0x8000;
  x &= 0x7FFFFFFF;
  if (x >= 0x7F800000) return static_cast<std::uint16_t>(sign | 0x7C00 | (x > 0x7F800000 ? 0x200 : 0));
  if (x >= 0x477FF000) return static_cast<std::uint16_t>(sign | 0x7C00);  // rounds past 65504
  if (x < 0x38800000) {  // result is subnormal or zero: let the FPU round in units of 2^-24
    float t = FromBits(x) + 0.5f;
    return static_cast<std::uint16_t>(sign | (Bits(t) - 0x3F000000));
  }
  std::uint32_t odd = (x >> 13) & 1;
  x += 0xC8000FFF + odd;  // rebias exponent by (15 - 127) and round
  return static_cast<std::uint16_t>(sign | (x >> 13));
}

float HalfToFloat(std::uint16_t h) {
  std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000) << 16;
  std::uint32_t e = (h >> 10) & 0x1F, m = h & 0x3FF;
  if (e == 0) return FromBits(sign | Bits(static_cast<float>(m) * 0x1p-24f));
  if (e == 31) return FromBits(sign | 0x7F800000 | (m << 13));
  return FromBits(sign | ((e + 112) << 23) | (m << 13));
}

std::uint16_t FloatToBf16(float f) {
  std::uint32_t x = Bits(f);
  if ((x & 0x7FFFFFFF) > 0x7F800000) return static_cast<std::uint16_t>((x >> 16) | 0x40);
  x += 0x7FFF + ((x >> 16) & 1);
  return static_cast<std::uint16_t>(x >> 16);
}

float Bf16ToFloat(std::uint16_t b) { return FromBits(static_cast<std::uint32_t>(b) << 16); }

}  // namespace murmur
