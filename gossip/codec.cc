#include "gossip/codec.h"

#include "core/check.h"

namespace murmur::gossip {

namespace {
bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}
bool StartsWith(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }
}  // namespace

Result<CodecSpec> CodecSpec::Parse(const std::string& spec) {
  CodecSpec out;
  out.spec = spec;
  std::string base = spec;
  if (EndsWith(base, ",no-ef")) {
    out.error_feedback = false;
    base.resize(base.size() - 6);
  } else if (EndsWith(base, ",ef")) {
    base.resize(base.size() - 3);
  }
  if (base.empty()) base = "none";
  // The compressor itself keeps no residual: gossip does error feedback.
  auto made = compression::MakeCompressor(base + ",no-ef");
  if (!made.ok()) return made.status().WithContext("compression '" + spec + "'");
  out.compressor = std::move(made).value();
  out.lossless_fp32 = base == "none";
  out.full_model_safe = base == "none" || base == "fp16" || base == "bf16" || StartsWith(base, "int8");
  if (StartsWith(base, "topk") || StartsWith(base, "threshold")) {
    out.flops_per_element = 8;
  } else if (StartsWith(base, "powersgd")) {
    out.flops_per_element = 16;
  } else {
    out.flops_per_element = 2;
  }
  return out;
}

Codec::Codec(const CodecSpec& spec, NodeId node, const Layout& layout, Rng rng)
    : spec_(spec), layout_(layout), rng_(rng) {
  state_.node = node;
}

UpdatePtr Codec::Compress(std::span<const float> v, std::uint64_t round) {
  state_.round = round;
  return spec_.compressor->Compress(v, layout_, state_, rng_);
}

UpdatePtr Codec::CompressDifference(std::span<const float> x, std::span<const float> base,
                                    std::uint64_t round) {
  MURMUR_CHECK(x.size() == base.size());
  scratch_.resize(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) scratch_[i] = x[i] - base[i];
  return Compress(scratch_, round);
}

}  // namespace murmur::gossip
