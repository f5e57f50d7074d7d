// The run-time dispatch of the compression kernels (core/simd.h):
// the level detected agrees with the kernel's own account of the CPU
// (/proc/cpuinfo), and every level the CPU has computes the same bytes as the
// scalar code, with and without error feedback, at lengths that end inside
// a vector and for values across the float range.
#include "core/simd.h"

#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "compression/select.h"
#include "compression/values.h"
#include "core/rng.h"

namespace murmur::compression {
namespace {

// Values over many binades, both signs, zeros, subnormals and values beyond
// fp16's range, so that rounding, overflow and the signs are all exercised.
std::vector<float> Values(std::size_t n, std::uint64_t seed) {
  Rng rng(seed);
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) {
    const double u = rng.Uniform();
    float x = static_cast<float>(std::ldexp(u + 0.5, static_cast<int>(rng.Uniform() * 60) - 40));
    if (rng.Uniform() < 0.5) x = -x;
    if (i % 97 == 5) x = 0.0f;
    if (i % 89 == 7) x = -0.0f;
    if (i % 83 == 11) x = 0x1p-140f;  // subnormal
    if (i % 79 == 13) x = 70000.0f;   // over fp16's largest finite value
    v[i] = x;
  }
  return v;
}

#if defined(__x86_64__)
// The "flags" line of /proc/cpuinfo, as words.
std::set<std::string> CpuFlags() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("flags", 0) != 0) continue;
    std::istringstream words(line.substr(line.find(':') + 1));
    std::set<std::string> flags;
    for (std::string w; words >> w;) flags.insert(w);
    return flags;
  }
  return {};
}
#endif

TEST_CASE("the detected SIMD level is what the kernel reports in /proc/cpuinfo, and capping lowers it") {
  const ScopedSimdCap uncap(SimdLevel::kAvx512);
#if defined(__x86_64__)
  const std::set<std::string> flags = CpuFlags();
  REQUIRE_FALSE(flags.empty());
  const bool avx2 = flags.count("avx2") && flags.count("fma") && flags.count("f16c");
  const SimdLevel expected =
      !avx2 ? SimdLevel::kGeneric : (flags.count("avx512f") ? SimdLevel::kAvx512 : SimdLevel::kAvx2);
  CHECK(SupportedSimd() == expected);
#else
  CHECK(SupportedSimd() == SimdLevel::kGeneric);
#endif
  MESSAGE("the kernels run " << SimdName(SupportedSimd()) << " code here");
  CHECK(ActiveSimd() == SupportedSimd());
  CHECK(CapSimd(SimdLevel::kGeneric) == SimdLevel::kAvx512);
  CHECK(ActiveSimd() == SimdLevel::kGeneric);
  CHECK(CapSimd(SimdLevel::kAvx2) == SimdLevel::kGeneric);
  CHECK(static_cast<int>(ActiveSimd()) <= static_cast<int>(SimdLevel::kAvx2));
  CHECK(SimdName(SimdLevel::kAvx512) == "avx512");
}

bool SamePacked(const PackedValues& a, const PackedValues& b) {
  if (a.count != b.count || a.payload != b.payload || a.scales.size() != b.scales.size()) return false;
  for (std::size_t i = 0; i < a.scales.size(); ++i)
    if (std::memcmp(&a.scales[i], &b.scales[i], sizeof(float)) != 0) return false;
  return true;
}

bool SameBits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), 4 * a.size()) == 0);
}

TEST_CASE(
    "every SIMD level packs fp16, bf16, int8, sign, ternary and QSGD values to the scalar code's bytes") {
  const ScopedSimdCap uncap(SimdLevel::kAvx512);
  std::vector<ValueCoding> codings = {{ValueType::kF16},
                                      {ValueType::kBF16},
                                      {ValueType::kSign},
                                      {ValueType::kTernary},
                                      {ValueType::kQsgd, 0, 7}};
  for (std::uint32_t block : {1u, 7u, 16u, 64u, 1000u}) codings.push_back({ValueType::kInt8, block});
  for (const ValueCoding& coding : codings) {
    for (std::size_t n : {0, 1, 7, 8, 9, 15, 16, 17, 33, 100, 1000, 4099}) {
      const std::vector<float> x = Values(n, 11 + n);
      const std::vector<float> residual0 = Values(n, 911 + n);
      CapSimd(SimdLevel::kGeneric);
      std::vector<float> r_scalar = residual0;
      const PackedValues plain_scalar = PackValues(x, {}, coding, 42 + n);
      const PackedValues ef_scalar = PackValues(x, r_scalar, coding, 42 + n);
      for (SimdLevel level : SupportedSimdLevels()) {
        CAPTURE(SimdName(level));
        CAPTURE(ValueTypeName(coding.type));
        CAPTURE(coding.block);
        CAPTURE(n);
        CapSimd(level);
        std::vector<float> r = residual0;
        CHECK(SamePacked(PackValues(x, {}, coding, 42 + n), plain_scalar));
        CHECK(SamePacked(PackValues(x, r, coding, 42 + n), ef_scalar));
        CHECK(SameBits(r, r_scalar));
      }
    }
  }
}

TEST_CASE("every SIMD level selects the same top-k and threshold indices as the scalar code") {
  const ScopedSimdCap uncap(SimdLevel::kAvx512);
  for (std::size_t n : {1, 15, 16, 17, 31, 100, 1000, 5003}) {
    const std::vector<float> x = Values(n, 3 + n), r0 = Values(n, 303 + n);
    const std::size_t k = 1 + n / 10;
    const float tau = 1e-3f;
    struct Out {
      std::vector<std::uint32_t> exact, exact_acc, approx, approx_acc, thr, thr_acc;
      std::vector<float> r1, r2, r3;
    };
    auto run = [&] {
      Out o;
      TopKExact(x, k, o.exact);
      o.r1 = r0;
      TopKExactAccumulate(o.r1, x, k, o.exact_acc);
      Rng a(5), b(5);
      TopKApprox(x, k, a, o.approx);
      o.r2 = r0;
      TopKApproxAccumulate(o.r2, x, k, b, o.approx_acc);
      ThresholdSelect(x, tau, o.thr);
      o.r3 = r0;
      ThresholdSelectAccumulate(o.r3, x, tau, o.thr_acc);
      return o;
    };
    CapSimd(SimdLevel::kGeneric);
    const Out scalar = run();
    CHECK(scalar.exact.size() == k);
    for (SimdLevel level : SupportedSimdLevels()) {
      CAPTURE(SimdName(level));
      CAPTURE(n);
      CapSimd(level);
      const Out o = run();
      CHECK(o.exact == scalar.exact);
      CHECK(o.exact_acc == scalar.exact_acc);
      CHECK(o.approx == scalar.approx);
      CHECK(o.approx_acc == scalar.approx_acc);
      CHECK(o.thr == scalar.thr);
      CHECK(o.thr_acc == scalar.thr_acc);
      CHECK(SameBits(o.r1, scalar.r1));
      CHECK(SameBits(o.r2, scalar.r2));
      CHECK(SameBits(o.r3, scalar.r3));
    }
  }
}

}  // namespace
}  // namespace murmur::compression
