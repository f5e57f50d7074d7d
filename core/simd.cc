#include "core/simd.h"

#include <atomic>
#include <cstdlib>
#include <string>

#include <Eigen/Core>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

namespace murmur {
namespace {

constexpr const char* kEnvironment = "MURMUR_SIMD";

SimdLevel Detect() {
#if defined(__x86_64__)
  // __builtin_cpu_supports checks the operating system's XSAVE state for AVX
  // and AVX-512; F16C (CPUID leaf 1, ECX bit 29) it does not name in GCC 12.
  __builtin_cpu_init();  // in case this runs before libgcc's own constructor
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  const bool f16c = __get_cpuid(1, &eax, &ebx, &ecx, &edx) != 0 && (ecx & bit_F16C) != 0;
  if (!f16c || !__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) return SimdLevel::kGeneric;
  return __builtin_cpu_supports("avx512f") ? SimdLevel::kAvx512 : SimdLevel::kAvx2;
#else
  return SimdLevel::kGeneric;
#endif
}

// The cap starts at MURMUR_SIMD where that names a level, so that a library
// user (a test, an embedding program) gets the variable's effect without
// calling CapSimdFromEnvironment; the programs call it to refuse bad values.
std::atomic<int>& Cap() {
  static std::atomic<int> cap{[] {
    const char* value = std::getenv(kEnvironment);
    const std::optional<SimdLevel> level = value != nullptr ? ParseSimdLevel(value) : std::nullopt;
    return static_cast<int>(level.value_or(SimdLevel::kAvx512));
  }()};
  return cap;
}

}  // namespace

std::string_view SimdName(SimdLevel level) {
  switch (level) {
    case SimdLevel::kGeneric: return "generic";
    case SimdLevel::kAvx2: return "avx2";
    case SimdLevel::kAvx512: return "avx512";
  }
  return "generic";
}

std::optional<SimdLevel> ParseSimdLevel(std::string_view name) {
  for (SimdLevel level : {SimdLevel::kGeneric, SimdLevel::kAvx2, SimdLevel::kAvx512})
    if (name == SimdName(level)) return level;
  return std::nullopt;
}

SimdLevel SupportedSimd() {
  static const SimdLevel supported = Detect();
  return supported;
}

std::vector<SimdLevel> SupportedSimdLevels() {
  std::vector<SimdLevel> levels;
  for (int l = 0; l <= static_cast<int>(SupportedSimd()); ++l) levels.push_back(static_cast<SimdLevel>(l));
  return levels;
}

SimdLevel ActiveSimd() {
  const int c = Cap().load(std::memory_order_relaxed);
  const int s = static_cast<int>(SupportedSimd());
  return static_cast<SimdLevel>(c < s ? c : s);
}

SimdLevel CapSimd(SimdLevel level) {
  return static_cast<SimdLevel>(Cap().exchange(static_cast<int>(level), std::memory_order_relaxed));
}

Status CapSimdFromEnvironment() {
  const char* value = std::getenv(kEnvironment);
  if (value == nullptr) return Status::Ok();
  const std::optional<SimdLevel> level = ParseSimdLevel(value);
  if (!level)
    return Status::InvalidArgument(std::string(kEnvironment) + "='" + value +
                                   "' is not a kernel level: expected generic, avx2 or avx512");
  CapSimd(*level);
  return Status::Ok();
}

void PinEigenBlocking() { Eigen::setCpuCacheSizes(32 << 10, 1 << 20, 32 << 20); }

}  // namespace murmur
