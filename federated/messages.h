// FedMessage: what a federated server and its clients send each other.
//
// A task (server -> client) carries the global model of round `round` (as a
// compression::Update, fp32 or a value coding such as fp16), and for SCAFFOLD
// the server control variate c; `budget_ns`, when > 0, is how long the client
// may train before it must report (partial work). A result (client -> server)
// carries the client's model difference Delta_i = y_i - x (or, when the task
// asked for it, the model y_i itself), for SCAFFOLD the control-variate change,
// the sample weight n_i, the number of local steps tau_i actually taken and the
// mean training loss. Updates are shared, never copied.
//
// Wire layout (little-endian), after the frame and envelope of node/:
//   u8  kind        (0 task, 1 result)
//   u8  flags       (bit 0: the payload is the model, not a difference;
//                    bit 1: the task asks for the model back;
//                    bit 2: the round is securely aggregated: the client
//                    answers with SecAgg+ messages, not a result)
//                    bit 3: an empty result: an edge aggregator none of
//                    whose clients answered in time; its update is empty)
//   u32 steps
//   u64 round
//   f64 weight
//   f64 loss
//   i64 budget_ns
//   u8  count       (1 or 2 updates)
//   count x { u32 length, the Update's encoding (docs/compression.md) }
//
// Thread-safety: immutable after construction.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "compression/update.h"
#include "core/env.h"
#include "core/status.h"

namespace murmur::federated {

inline constexpr std::uint32_t kFedMessageKind = 0x20;

enum class FedKind : std::uint8_t { kTask = 0, kResult = 1 };
inline constexpr std::uint8_t kFlagIsModel = 1;
inline constexpr std::uint8_t kFlagWantModel = 2;
inline constexpr std::uint8_t kFlagSecureAggregation = 4;
inline constexpr std::uint8_t kFlagEmpty = 8;

using UpdatePtr = std::shared_ptr<const compression::Update>;

struct FedHeader {
  FedKind kind = FedKind::kTask;
  std::uint8_t flags = 0;
  std::uint32_t steps = 0;
  std::uint64_t round = 0;
  double weight = 0;
  double loss = 0;
  std::int64_t budget_ns = 0;
};

class FedMessage final : public Message {
 public:
  static constexpr std::size_t kHeaderBytes = 1 + 1 + 4 + 8 + 8 + 8 + 8 + 1;
  static constexpr std::size_t kMaxUpdates = 2;

  // REQUIRES: 1 <= updates.size() <= kMaxUpdates.
  FedMessage(FedHeader header, std::vector<UpdatePtr> updates);

  std::uint32_t kind() const override { return kFedMessageKind; }
  std::size_t EncodedSize() const override;
  void EncodeTo(std::vector<std::uint8_t>& out) const override;

  // Parses a message; any malformed input gives a Status naming the field.
  static Result<std::shared_ptr<const FedMessage>> Decode(std::span<const std::uint8_t> bytes,
                                                          const compression::DecodeLimits& limits);

  const FedHeader& header() const { return header_; }
  const std::vector<UpdatePtr>& updates() const { return updates_; }

 private:
  FedHeader header_;
  std::vector<UpdatePtr> updates_;
};

}  // namespace murmur::federated
