#include "ml/cpu.h"

#include <atomic>

namespace murmur::ml {
namespace {

CnnSimd Detect() {
#if defined(__x86_64__)
  __builtin_cpu_init();  // in case this runs before libgcc's own constructor
  // GCC's checks include the operating system's XSAVE state for AVX and AVX-512.
  if (__builtin_cpu_supports("avx512f")) return CnnSimd::kAvx512;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return CnnSimd::kAvx2;
#endif
  return CnnSimd::kGeneric;
}

std::atomic<int> cap{static_cast<int>(CnnSimd::kAvx512)};

}  // namespace

std::string_view CnnSimdName(CnnSimd level) {
  switch (level) {
    case CnnSimd::kGeneric: return "generic";
    case CnnSimd::kAvx2: return "avx2";
    case CnnSimd::kAvx512: return "avx512";
  }
  return "generic";
}

CnnSimd SupportedCnnSimd() {
  static const CnnSimd supported = Detect();
  return supported;
}

CnnSimd ActiveCnnSimd() {
  const int c = cap.load(std::memory_order_relaxed);
  const int s = static_cast<int>(SupportedCnnSimd());
  return static_cast<CnnSimd>(c < s ? c : s);
}

CnnSimd CapCnnSimd(CnnSimd level) {
  return static_cast<CnnSimd>(cap.exchange(static_cast<int>(level), std::memory_order_relaxed));
}

}  // namespace murmur::ml
