#include "node/job/decoders.h"

#include <memory>

#include "federated/messages.h"
#include "federated/secagg_messages.h"
#include "gossip/messages.h"
#include "node/job/federated_control.h"
#include "node/job/job_message.h"

namespace murmur::node {

namespace {

// A decoder from a message type's static Decode (with or without limits).
template <typename M, typename... Args>
MessageDecoder DecoderOf(Args... args) {
  return [args...](std::span<const std::uint8_t> bytes) -> Result<MessagePtr> {
    MURMUR_ASSIGN_OR_RETURN(auto msg, M::Decode(bytes, args...));
    return MessagePtr(std::move(msg));
  };
}

}  // namespace

DecoderTable JobDecoders(const compression::DecodeLimits& limits) {
  auto inner = std::make_shared<DecoderTable>();
  (*inner)[gossip::kGossipMessageKind] = DecoderOf<gossip::GossipMessage>(limits);
  (*inner)[federated::kFedMessageKind] = DecoderOf<federated::FedMessage>(limits);
  (*inner)[federated::kSecAggMessageKind] = DecoderOf<federated::SecAggMessage>();
  (*inner)[kFedControlMessageKind] = DecoderOf<FedControlMessage>();
  DecoderTable table = *inner;
  // The tag, then a message of an inner kind above (never another JobMessage).
  table[kJobMessageKind] = [inner](std::span<const std::uint8_t> bytes) -> Result<MessagePtr> {
    MURMUR_ASSIGN_OR_RETURN(auto msg,
                            DecodeJobMessage(bytes, [&](std::uint32_t kind) -> const MessageDecoder* {
                              auto it = inner->find(kind);
                              return it == inner->end() ? nullptr : &it->second;
                            }));
    return MessagePtr(std::move(msg));
  };
  return table;
}

}  // namespace murmur::node
