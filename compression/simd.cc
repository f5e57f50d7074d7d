#include "compression/simd.h"

#include <atomic>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

namespace murmur::compression {
namespace {

SimdLevel Detect() {
#if defined(__x86_64__)
  // __builtin_cpu_supports checks the OS's XSAVE state for AVX and AVX-512;
  // F16C (CPUID leaf 1, ECX bit 29) it does not name in GCC 12.
  __builtin_cpu_init();  // in case this runs before libgcc's own constructor
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  const bool f16c = __get_cpuid(1, &eax, &ebx, &ecx, &edx) != 0 && (ecx & bit_F16C) != 0;
  if (!f16c || !__builtin_cpu_supports("avx2")) return SimdLevel::kScalar;
  return __builtin_cpu_supports("avx512f") ? SimdLevel::kAvx512 : SimdLevel::kAvx2;
#else
  return SimdLevel::kScalar;
#endif
}

std::atomic<int> cap{static_cast<int>(SimdLevel::kAvx512)};

}  // namespace

std::string_view SimdName(SimdLevel level) {
  switch (level) {
    case SimdLevel::kScalar: return "scalar";
    case SimdLevel::kAvx2: return "avx2";
    case SimdLevel::kAvx512: return "avx512";
  }
  return "scalar";
}

SimdLevel SupportedSimd() {
  static const SimdLevel supported = Detect();
  return supported;
}

SimdLevel ActiveSimd() {
  const int c = cap.load(std::memory_order_relaxed);
  const int s = static_cast<int>(SupportedSimd());
  return static_cast<SimdLevel>(c < s ? c : s);
}

SimdLevel CapSimd(SimdLevel level) {
  return static_cast<SimdLevel>(cap.exchange(static_cast<int>(level), std::memory_order_relaxed));
}

}  // namespace murmur::compression
