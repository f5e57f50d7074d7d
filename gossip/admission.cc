#include "gossip/admission.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/check.h"
#include "core/reduce.h"
#include "core/rng.h"

namespace murmur::gossip {
namespace {

// The sum over the blocks of n values, in order, of block(offset, length).
template <class Block>
double OverBlocks(std::size_t n, Block block) {
  double sum = 0;
  for (std::size_t b = 0; b < n; b += kAdmissionBlock) sum += block(b, std::min(kAdmissionBlock, n - b));
  return sum;
}

}  // namespace

UpdateAdmission::UpdateAdmission(const CodecSpec& codec, double plausibility) : plausibility_(plausibility) {
  MURMUR_CHECK(plausibility >= 0);
  if (codec.value_coding) {
    // What the codec sends, taken from the codec itself: the coding of one value.
    compression::CompressorState state;
    Rng rng(0, 0, RngPurpose::kCompression);
    const float probe[1] = {1.0f};
    auto sample = codec.compressor->Compress(std::span<const float>(probe, 1), Layout(), state, rng);
    dense_only_ = true;
    value_type_ =
        sample->dense_f32() != nullptr ? compression::ValueType::kF32 : sample->values().coding.type;
  }
}

void AddBlockDistances(const float* theirs, const float* own, std::size_t len, double& d2, double* own2) {
  const std::span<const float> t(theirs, len), o(own, len);
  const float block_d2 = FixedSquaredDistance(t, o);
  if (std::isfinite(block_d2)) {
    d2 += block_d2;
  } else {
    double sum = 0;
    for (std::size_t k = 0; k < len; ++k) {
      const double d = static_cast<double>(theirs[k]) - own[k];
      sum += d * d;
    }
    d2 += sum;
  }
  if (own2 != nullptr) *own2 += SquaredNormOrDouble(o);
}

double BlockSquaredNorm(std::span<const float> own) {
  return OverBlocks(own.size(),
                    [&](std::size_t b, std::size_t len) { return SquaredNormOrDouble(own.subspan(b, len)); });
}

double BlockSquaredDistance(std::span<const float> a, std::span<const float> b) {
  MURMUR_CHECK(a.size() == b.size());
  return OverBlocks(a.size(), [&](std::size_t at, std::size_t len) {
    double d2 = 0;
    AddBlockDistances(a.data() + at, b.data() + at, len, d2, nullptr);
    return d2;
  });
}

std::optional<Refusal> UpdateAdmission::Check(const compression::Update& u, std::size_t size, bool fp32,
                                              bool values) const {
  if (u.size() != size) return Refusal::kWrongLength;
  const float* f32 = u.dense_f32();
  if (fp32) {
    if (f32 == nullptr) return Refusal::kWrongEncoding;
  } else if (dense_only_) {
    if (u.format() != compression::UpdateFormat::kDense) return Refusal::kWrongEncoding;
    const compression::ValueType type =
        f32 != nullptr ? compression::ValueType::kF32 : u.values().coding.type;
    if (type != value_type_) return Refusal::kWrongEncoding;
  }
  if (values && f32 != nullptr && !AllFinite({f32, size})) return Refusal::kNotFinite;
  return std::nullopt;
}

std::optional<Refusal> UpdateAdmission::Verdict(double d2, double own2) const {
  if (!std::isfinite(d2)) return Refusal::kNotFinite;
  if (plausibility_ > 0 && own2 > 0 && std::isfinite(own2) && d2 > plausibility_ * plausibility_ * own2)
    return Refusal::kImplausible;
  return std::nullopt;
}

bool UpdateAdmission::SurelyPlausible(double theirs2, double own2) const {
  if (plausibility_ <= 0) return true;
  if (!std::isfinite(theirs2) || !std::isfinite(own2) || own2 <= 0) return false;
  return std::sqrt(theirs2) + std::sqrt(own2) <= (1 - 1e-3) * plausibility_ * std::sqrt(own2);
}

bool AllFinite(std::span<const float> x) {
  // A finite sum has finite terms; an overflowing one is summed again in double.
  if (std::isfinite(FixedSum(x))) return true;
  double sum = 0;
  for (const float v : x) sum += v;
  return std::isfinite(sum);
}

double AddScaledSquaredNorm(float* out, const float* v, std::size_t n, float w) {
  return OverBlocks(n, [&](std::size_t b, std::size_t len) -> double {
    const std::span<const float> block(v + b, len);
    const float block2 = FixedAxpySquaredNorm({out + b, len}, block, w);
    return std::isfinite(block2) ? block2 : SquaredNormOrDouble(block);  // the same bits as BlockSquaredNorm
  });
}

double BlockSquaredNormPlusScaled(std::span<const float> a, std::span<const float> v, float w,
                                  std::span<float> out) {
  MURMUR_CHECK(a.size() == v.size() && out.size() == v.size());
  return OverBlocks(a.size(), [&](std::size_t b, std::size_t len) -> double {
    const std::span<const float> block = a.subspan(b, len);
    const float block2 = FixedSquaredNormPlusScaled(block, v.subspan(b, len), w, out.subspan(b, len));
    return std::isfinite(block2) ? block2 : SquaredNormOrDouble(block);  // the same bits as BlockSquaredNorm
  });
}

std::optional<Refusal> UpdateAdmission::Judge(std::span<const float> theirs,
                                              std::span<const float> own) const {
  MURMUR_CHECK(theirs.size() == own.size());
  double d2 = 0, own2 = 0;
  for (std::size_t b = 0; b < own.size(); b += kAdmissionBlock) {
    AddBlockDistances(theirs.data() + b, own.data() + b, std::min(kAdmissionBlock, own.size() - b), d2,
                      &own2);
  }
  return Verdict(d2, own2);
}

std::span<const float> UpdateAdmission::Values(const compression::Update& u, std::vector<float>& scratch) {
  if (const float* v = u.dense_f32(); v != nullptr) return {v, u.size()};
  scratch.assign(u.size(), 0.0f);
  Status st = u.AddTo(scratch);
  MURMUR_CHECK_MSG(st.ok(), st.ToString());
  return scratch;
}

std::optional<Refusal> UpdateAdmission::JudgeUpdate(const compression::Update& u, std::span<const float> own,
                                                    std::vector<float>& scratch) const {
  return Judge(Values(u, scratch), own);
}

}  // namespace murmur::gossip
