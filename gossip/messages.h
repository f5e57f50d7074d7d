// GossipMessage: what gossip nodes send each other.
//
// One message carries one vector (a model, a model difference, a gradient
// tracker or a push-sum running sum) as a compression::Update, plus the round
// it belongs to, the channel it feeds and one scalar (the push-sum weight or
// the gossip-learning model age). The Update is shared, never copied: the
// simulator hands the same object to every receiver.
//
// Wire layout (little-endian), after the frame and envelope of node/:
//   u8  channel   (0 model, 1 tracker, 2 push-sum, 3 gossip-learning model,
//                  4 CHOCO resynchronisation: the sender's public copy x^,
//                  round = the rounds whose differences it holds, scalar 1
//                  asks the receiver for its own x^ back, 0 does not,
//                  5 ring all-reduce segment: scalar = the step,
//                  gossip/ring_allreduce.h)
//   u64 round
//   f64 scalar
//   ... the Update's own encoding (docs/compression.md)
//
// Thread-safety: immutable after construction.
#pragma once

#include <cstdint>
#include <memory>
#include <span>

#include "compression/update.h"
#include "core/env.h"
#include "core/status.h"

namespace murmur::gossip {

inline constexpr std::uint32_t kGossipMessageKind = 0x10;

enum class Channel : std::uint8_t {
  kModel = 0,
  kTracker = 1,
  kPushSum = 2,
  kGossipModel = 3,
  kResync = 4,
  kRingSegment = 5
};
inline constexpr std::uint8_t kMaxChannel = 5;

using UpdatePtr = std::shared_ptr<const compression::Update>;

class GossipMessage final : public Message {
 public:
  static constexpr std::size_t kHeaderBytes = 1 + 8 + 8;

  GossipMessage(Channel channel, std::uint64_t round, double scalar, UpdatePtr update)
      : channel_(channel), round_(round), scalar_(scalar), update_(std::move(update)) {}

  std::uint32_t kind() const override { return kGossipMessageKind; }
  std::size_t EncodedSize() const override { return kHeaderBytes + update_->EncodedSize(); }
  void EncodeTo(std::vector<std::uint8_t>& out) const override;

  // Parses a message; any malformed input gives a Status.
  static Result<std::shared_ptr<const GossipMessage>> Decode(std::span<const std::uint8_t> bytes,
                                                             const compression::DecodeLimits& limits);

  Channel channel() const { return channel_; }
  std::uint64_t round() const { return round_; }
  double scalar() const { return scalar_; }
  const compression::Update& update() const { return *update_; }
  const UpdatePtr& update_ptr() const { return update_; }

 private:
  Channel channel_;
  std::uint64_t round_;
  double scalar_;
  UpdatePtr update_;
};

}  // namespace murmur::gossip
