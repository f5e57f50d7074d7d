#include "gossip/codec.h"

#include "compression/powersgd.h"
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
  // Gossip's own modifiers, last in the spec, in either order.
  bool choco = false, ef_given = false;
  for (bool more = true; more;) {
    more = false;
    if (EndsWith(base, ",no-ef")) {
      out.error_feedback = false;
      base.resize(base.size() - 6);
      more = ef_given = true;
    } else if (EndsWith(base, ",ef")) {
      base.resize(base.size() - 3);
      more = ef_given = true;
    } else if (EndsWith(base, ",choco")) {
      choco = true;
      base.resize(base.size() - 6);
      more = true;
    }
  }
  if (base.empty()) base = "none";
  // The compressor itself keeps no residual: gossip does error feedback.
  // (Its errors quote what the user wrote: checked without the suffix first.)
  if (auto as_written = compression::MakeCompressor(base); !as_written.ok())
    return as_written.status().WithContext("compression '" + spec + "'");
  auto made = compression::MakeCompressor(base + ",no-ef");
  if (!made.ok()) return made.status().WithContext("compression '" + spec + "'");
  out.compressor = std::move(made).value();
  if (const auto* powersgd = dynamic_cast<const compression::PowerSgdCompressor*>(out.compressor.get()))
    out.lowrank = powersgd->rank();
  out.value_coding = base == "none" || base == "fp16" || base == "bf16" || StartsWith(base, "int8");
  // ",choco": CHOCO's coded differences x - x^ even with a value coding; for
  // DiLoCo those differences are the pseudo-gradients, coded with error feedback.
  out.full_model_safe = out.value_coding && !choco;
  if (ef_given && out.full_model_safe)
    return Status::InvalidArgument("compression '" + spec +
                                   "': gossip sends whole models in a value coding, which leaves no residual "
                                   "for error feedback to carry, so ',ef' and ',no-ef' would change nothing; "
                                   "drop it, or add ',choco' to send CHOCO's coded differences with error "
                                   "feedback (docs/compression.md)");
  out.lossless_fp32 = base == "none" && !choco;
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

Status Codec::ExportState(NodeState& out) const {
  if (!state_.powersgd_q.empty())
    return Status::FailedPrecondition("compression '" + spec_.spec +
                                      "': PowerSGD's state cannot be checkpointed");
  const Rng::Position p = rng_.position();
  out.scalars["codec/rng_block"] = static_cast<double>(p.block);
  out.scalars["codec/rng_used"] = p.used;
  out.scalars["codec/rng_spare_normal"] = p.has_spare_normal ? p.spare_normal : 0.0;
  out.scalars["codec/rng_has_spare_normal"] = p.has_spare_normal ? 1 : 0;
  if (!state_.residual.empty()) out.vectors["codec/residual"] = state_.residual;
  if (!state_.momentum.empty()) out.vectors["codec/momentum"] = state_.momentum;
  return Status::Ok();
}

Status Codec::ImportState(const NodeState& in) {
  Rng::Position p;
  MURMUR_ASSIGN_OR_RETURN(double block, in.Scalar("codec/rng_block"));
  MURMUR_ASSIGN_OR_RETURN(double used, in.Scalar("codec/rng_used"));
  MURMUR_ASSIGN_OR_RETURN(double has_spare, in.Scalar("codec/rng_has_spare_normal"));
  MURMUR_ASSIGN_OR_RETURN(p.spare_normal, in.Scalar("codec/rng_spare_normal"));
  if (!(block >= 0 && block < 9007199254740992.0) || !(used >= 0 && used <= 4) || (used < 4 && block < 1) ||
      static_cast<double>(static_cast<int>(used)) != used)
    return Status::InvalidArgument("codec state: random stream position out of range");
  p.block = static_cast<std::uint64_t>(block);
  p.used = static_cast<int>(used);
  p.has_spare_normal = has_spare != 0;
  rng_.Seek(p);
  for (const char* name : {"codec/residual", "codec/momentum"}) {
    auto it = in.vectors.find(name);
    if (it == in.vectors.end()) continue;
    if (it->second.size() != layout_.total_size())
      return Status::InvalidArgument(std::string("codec state: '") + name + "' does not fit the model");
    (name[6] == 'r' ? state_.residual : state_.momentum) = it->second;
  }
  return Status::Ok();
}

}  // namespace murmur::gossip
