#include "gossip/messages.h"

#include <cmath>
#include <cstring>

#include "core/bytes.h"

namespace murmur::gossip {

void GossipMessage::EncodeTo(std::vector<std::uint8_t>& out) const {
  out.push_back(static_cast<std::uint8_t>(channel_));
  AppendLittleEndian<std::uint64_t>(out, round_);
  AppendLittleEndian<double>(out, scalar_);
  update_->Encode(out);
}

Result<std::shared_ptr<const GossipMessage>> GossipMessage::Decode(std::span<const std::uint8_t> bytes,
                                                                   const compression::DecodeLimits& limits) {
  if (bytes.size() < kHeaderBytes) {
    return Status::DataLoss("gossip message of " + std::to_string(bytes.size()) +
                            " bytes is shorter than its " + std::to_string(kHeaderBytes) + "-byte header");
  }
  std::uint8_t channel = bytes[0];
  if (channel > kMaxChannel) {
    return Status::InvalidArgument("gossip message channel " + std::to_string(channel) + " is unknown");
  }
  auto round = ReadLittleEndian<std::uint64_t>(bytes.data() + 1);
  auto scalar = ReadLittleEndian<double>(bytes.data() + 9);
  if (!std::isfinite(scalar)) return Status::InvalidArgument("gossip message scalar is not finite");
  MURMUR_ASSIGN_OR_RETURN(compression::Update update,
                          compression::Update::Decode(bytes.subspan(kHeaderBytes), limits));
  return std::make_shared<const GossipMessage>(
      static_cast<Channel>(channel), round, scalar,
      std::make_shared<const compression::Update>(std::move(update)));
}

}  // namespace murmur::gossip
