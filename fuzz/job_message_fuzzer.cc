// Fuzzes DecodeJobMessage (node/job_message.h: the job tag wrapper, kind
// 0x30, that murmurd receives from its peers) with the inner decoders a
// daemon registers (gossip, federated task/result, SecAgg+, federated job
// control): any input must yield a message or a Status (never a crash, leak
// or undefined behaviour), and whatever decodes must re-encode to exactly
// EncodedSize() bytes that carry the same inner kind and tag and decode and
// re-encode to the same bytes again (inner updates need not be
// byte-canonical, docs/compression.md, so the first encoding may differ from
// the input).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "federated/messages.h"
#include "federated/secagg_messages.h"
#include "gossip/messages.h"
#include "node/federated_control.h"
#include "node/job_message.h"

namespace {

using murmur::MessagePtr;
using murmur::Result;
using murmur::node::InnerDecoder;

const InnerDecoder* DecoderOf(std::uint32_t kind) {
  static const murmur::compression::DecodeLimits limits = [] {
    murmur::compression::DecodeLimits l;
    l.max_elements = 1 << 20;  // keeps each run fast; the checks are the same
    return l;
  }();
  static const InnerDecoder gossip = [](std::span<const std::uint8_t> b) -> Result<MessagePtr> {
    MURMUR_ASSIGN_OR_RETURN(auto m, murmur::gossip::GossipMessage::Decode(b, limits));
    return MessagePtr(std::move(m));
  };
  static const InnerDecoder fed = [](std::span<const std::uint8_t> b) -> Result<MessagePtr> {
    MURMUR_ASSIGN_OR_RETURN(auto m, murmur::federated::FedMessage::Decode(b, limits));
    return MessagePtr(std::move(m));
  };
  static const InnerDecoder secagg = [](std::span<const std::uint8_t> b) -> Result<MessagePtr> {
    MURMUR_ASSIGN_OR_RETURN(auto m, murmur::federated::SecAggMessage::Decode(b));
    return MessagePtr(std::move(m));
  };
  static const InnerDecoder control = [](std::span<const std::uint8_t> b) -> Result<MessagePtr> {
    MURMUR_ASSIGN_OR_RETURN(auto m, murmur::node::FedControlMessage::Decode(b));
    return MessagePtr(std::move(m));
  };
  switch (kind) {
    case murmur::gossip::kGossipMessageKind: return &gossip;
    case murmur::federated::kFedMessageKind: return &fed;
    case murmur::federated::kSecAggMessageKind: return &secagg;
    case murmur::node::kFedControlMessageKind: return &control;
    default: return nullptr;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  auto m = murmur::node::DecodeJobMessage({data, size}, DecoderOf);
  if (!m.ok()) return 0;
  // The 12-byte header is read as it came.
  std::uint32_t kind = 0;
  for (int i = 3; i >= 0; --i) kind = (kind << 8) | data[i];
  std::uint64_t tag = 0;
  for (int i = 11; i >= 4; --i) tag = (tag << 8) | data[i];
  if ((*m)->inner()->kind() != kind || (*m)->tag() != tag) std::abort();
  std::vector<std::uint8_t> once;
  (*m)->EncodeTo(once);
  if (once.size() != (*m)->EncodedSize()) std::abort();
  if (!std::equal(once.begin(), once.begin() + 12, data)) std::abort();
  auto again = murmur::node::DecodeJobMessage(once, DecoderOf);
  if (!again.ok()) std::abort();
  std::vector<std::uint8_t> twice;
  (*again)->EncodeTo(twice);
  if (twice != once) std::abort();
  return 0;
}
