#include "core/corrupted_message.h"

#include <algorithm>

#include "core/log.h"

namespace murmur {

std::shared_ptr<const CorruptedMessage> CorruptedMessage::Make(const Message& original, Rng& rng, int flips,
                                                               std::size_t max_cut) {
  std::vector<std::uint8_t> bytes;
  bytes.reserve(original.EncodedSize());
  original.EncodeTo(bytes);
  if (!bytes.empty()) {
    for (int f = 0; f < flips; ++f) {
      auto at = static_cast<std::size_t>(rng.UniformInt(bytes.size()));
      bytes[at] ^= static_cast<std::uint8_t>(1 + rng.UniformInt(255));  // nonzero: the byte changes
    }
    std::size_t cut = std::min(max_cut, bytes.size() - 1);
    if (cut > 0) bytes.resize(bytes.size() - 1 - static_cast<std::size_t>(rng.UniformInt(cut)));
  }
  return std::make_shared<const CorruptedMessage>(original.kind(), std::move(bytes));
}

void DecodingSink::OnMessage(NodeId from, MessagePtr msg) {
  const auto* corrupted = dynamic_cast<const CorruptedMessage*>(msg.get());
  if (corrupted == nullptr) {
    target_->OnMessage(from, std::move(msg));
    return;
  }
  Result<MessagePtr> decoded = decoder_(corrupted->kind(), corrupted->bytes());
  if (!decoded.ok()) {
    ++rejected_;
    MURMUR_LOG(kDebug) << "corrupted message from node " << from
                       << " rejected: " << decoded.status().ToString();
    return;
  }
  ++accepted_;
  target_->OnMessage(from, std::move(decoded).value());
}

}  // namespace murmur
