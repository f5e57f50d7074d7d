// IEEE 754 binary16 ("half") and bfloat16 conversions, round to nearest even:
// the fp16/bf16 value codings of compression, and float16 arrays read from
// NumPy files (ml/npy.h).
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>

namespace murmur {

std::uint16_t FloatToHalf(float f);
float HalfToFloat(std::uint16_t h);
std::uint16_t FloatToBf16(float f);
float Bf16ToFloat(std::uint16_t b);

}  // namespace murmur
