// FedControlMessage: the two messages a federated job of murmurd adds to the
// engine's own (federated/messages.h): a client's "join" (it runs the job and
// can take tasks) and the aggregator's "done" (the job ended after `round`
// server updates; the clients end too).
//
// Wire layout (little-endian), after the frame and envelope of node/:
//   u8  what   (0 join, 1 done)
//   u64 round  (done: server updates made; join: 0)
//
// Thread-safety: immutable after construction.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "core/env.h"
#include "core/status.h"

namespace murmur::node {

inline constexpr std::uint32_t kFedControlMessageKind = 0x22;

class FedControlMessage final : public Message {
 public:
  enum class What : std::uint8_t { kJoin = 0, kDone = 1 };
  static constexpr std::size_t kBytes = 1 + 8;

  FedControlMessage(What what, std::uint64_t round) : what_(what), round_(round) {}

  std::uint32_t kind() const override { return kFedControlMessageKind; }
  std::size_t EncodedSize() const override { return kBytes; }
  void EncodeTo(std::vector<std::uint8_t>& out) const override;
  // Exactly kBytes with a known `what`; otherwise DataLoss naming the field.
  static Result<std::shared_ptr<const FedControlMessage>> Decode(std::span<const std::uint8_t> bytes);

  What what() const { return what_; }
  std::uint64_t round() const { return round_; }

 private:
  What what_;
  std::uint64_t round_;
};

}  // namespace murmur::node
