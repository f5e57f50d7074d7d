// Codec: a gossip node's compressor together with its per-node state.
//
// CodecSpec parses a compression spec once ("none", "fp16", "topk:0.01",
// "topk:0.01:fp16,no-ef", "int8,choco", ...; grammar in docs/compression.md,
// ",choco" in docs/algorithms.md) and is shared
// by all nodes; each node then gets its own Codec (state, random stream,
// scratch). Gossip decides how error feedback is done, not the compressor:
// in CHOCO form the difference x - x^ is itself the residual memory, so the
// compressor runs without one, and ",no-ef" switches the node to sending only
// the latest change (see gossip/decentralized_sgd.h).
//
// Thread-safety: a Codec belongs to one node; CodecSpec is immutable.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "compression/compressor.h"
#include "core/param_vector.h"
#include "core/rng.h"
#include "gossip/messages.h"
#include "gossip/node_state.h"

namespace murmur::gossip {

struct CodecSpec {
  std::string spec;
  std::shared_ptr<const compression::Compressor> compressor;  // built without its own residual
  bool error_feedback = true;
  // Lossless or a fine value coding (fp16, bf16, int8): applying it to whole
  // models keeps them usable, so nodes can exchange full models with it.
  bool full_model_safe = true;
  // The base is none, fp16, bf16 or int8 (with or without ",choco", which
  // makes D-PSGD and DiLoCo send CHOCO's coded differences instead of models:
  // full_model_safe is then false).
  bool value_coding = true;
  // "none": the update is the fp32 vector itself, so a node may share its
  // model with the outgoing message instead of copying it (Update::SharedDenseF32).
  bool lossless_fp32 = false;
  // PowerSGD's rank r for "powersgd:r"; 0 for every other compressor.
  std::uint32_t lowrank = 0;
  // Rough cost, for the simulator's compute time.
  double flops_per_element = 1;

  static Result<CodecSpec> Parse(const std::string& spec);
};

class Codec {
 public:
  Codec(const CodecSpec& spec, NodeId node, const Layout& layout, Rng rng);

  bool full_model_safe() const { return spec_.full_model_safe; }
  bool error_feedback() const { return spec_.error_feedback; }
  bool lossless_fp32() const { return spec_.lossless_fp32; }
  double FlopsPerElement() const { return spec_.flops_per_element; }
  const std::string& spec() const { return spec_.spec; }
  const CodecSpec& codec_spec() const { return spec_; }

  // C(v).
  UpdatePtr Compress(std::span<const float> v, std::uint64_t round);
  // C(x - base). REQUIRES: x.size() == base.size().
  UpdatePtr CompressDifference(std::span<const float> x, std::span<const float> base, std::uint64_t round);

  // Adds the codec's state to a node's: the position of its random stream
  // (scalars "codec/rng_*") and any compressor memory ("codec/residual",
  // "codec/momentum"). PowerSGD's Q matrices are not model-sized: a codec
  // holding them refuses to export (FailedPrecondition).
  Status ExportState(NodeState& out) const;
  // REQUIRES: a codec built as the exporting one (spec, node, seed), unused.
  Status ImportState(const NodeState& in);

 private:
  CodecSpec spec_;
  Layout layout_;
  compression::CompressorState state_;
  Rng rng_;
  std::vector<float> scratch_;
};

}  // namespace murmur::gossip
