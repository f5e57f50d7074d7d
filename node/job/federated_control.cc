#include "node/job/federated_control.h"

#include "core/bytes.h"

namespace murmur::node {

void FedControlMessage::EncodeTo(std::vector<std::uint8_t>& out) const {
  out.push_back(static_cast<std::uint8_t>(what_));
  AppendLittleEndian<std::uint64_t>(out, round_);
}

Result<std::shared_ptr<const FedControlMessage>> FedControlMessage::Decode(
    std::span<const std::uint8_t> bytes) {
  if (bytes.size() != kBytes)
    return Status::DataLoss("federated control message: " + std::to_string(bytes.size()) + " bytes, not " +
                            std::to_string(kBytes));
  if (bytes[0] > static_cast<std::uint8_t>(What::kDone))
    return Status::DataLoss("federated control message field 'what': " + std::to_string(bytes[0]) +
                            " is not 0 (join) or 1 (done)");
  return std::make_shared<const FedControlMessage>(static_cast<What>(bytes[0]),
                                                   ReadLittleEndian<std::uint64_t>(bytes.data() + 1));
}

}  // namespace murmur::node
