#include "federated/messages.h"

#include <cmath>
#include <cstring>

#include "core/bytes.h"
#include "core/check.h"

namespace murmur::federated {

FedMessage::FedMessage(FedHeader header, std::vector<UpdatePtr> updates)
    : header_(header), updates_(std::move(updates)) {
  MURMUR_CHECK(!updates_.empty() && updates_.size() <= kMaxUpdates);
}

std::size_t FedMessage::EncodedSize() const {
  std::size_t n = kHeaderBytes;
  for (const auto& u : updates_) n += 4 + u->EncodedSize();
  return n;
}

void FedMessage::EncodeTo(std::vector<std::uint8_t>& out) const {
  out.push_back(static_cast<std::uint8_t>(header_.kind));
  out.push_back(header_.flags);
  AppendLittleEndian<std::uint32_t>(out, header_.steps);
  AppendLittleEndian<std::uint64_t>(out, header_.round);
  AppendLittleEndian<double>(out, header_.weight);
  AppendLittleEndian<double>(out, header_.loss);
  AppendLittleEndian<std::int64_t>(out, header_.budget_ns);
  out.push_back(static_cast<std::uint8_t>(updates_.size()));
  for (const auto& u : updates_) {
    AppendLittleEndian<std::uint32_t>(out, static_cast<std::uint32_t>(u->EncodedSize()));
    u->Encode(out);
  }
}

Result<std::shared_ptr<const FedMessage>> FedMessage::Decode(std::span<const std::uint8_t> bytes,
                                                             const compression::DecodeLimits& limits) {
  if (bytes.size() < kHeaderBytes) {
    return Status::DataLoss("federated message: " + std::to_string(bytes.size()) + " bytes, header needs " +
                            std::to_string(kHeaderBytes));
  }
  const std::uint8_t* p = bytes.data();
  FedHeader h;
  if (p[0] > 1) return Status::DataLoss("federated message: kind " + std::to_string(p[0]) + " is not 0 or 1");
  h.kind = static_cast<FedKind>(p[0]);
  h.flags = p[1];
  if ((h.flags & ~(kFlagIsModel | kFlagWantModel | kFlagSecureAggregation | kFlagEmpty)) != 0) {
    return Status::DataLoss("federated message: unknown flags " + std::to_string(h.flags));
  }
  h.steps = ReadLittleEndian<std::uint32_t>(p + 2);
  h.round = ReadLittleEndian<std::uint64_t>(p + 6);
  h.weight = ReadLittleEndian<double>(p + 14);
  h.loss = ReadLittleEndian<double>(p + 22);
  h.budget_ns = ReadLittleEndian<std::int64_t>(p + 30);
  const std::uint8_t count = p[38];
  if (!std::isfinite(h.weight) || h.weight < 0) return Status::DataLoss("federated message: bad weight");
  if (!std::isfinite(h.loss)) return Status::DataLoss("federated message: loss is not finite");
  if (h.budget_ns < 0) return Status::DataLoss("federated message: negative budget");
  if (count < 1 || count > kMaxUpdates) {
    return Status::DataLoss("federated message: " + std::to_string(count) + " updates, allowed 1 to " +
                            std::to_string(kMaxUpdates));
  }
  std::size_t pos = kHeaderBytes;
  std::vector<UpdatePtr> updates;
  for (std::uint8_t i = 0; i < count; ++i) {
    if (bytes.size() - pos < 4) return Status::DataLoss("federated message: truncated update length");
    const std::uint32_t len = ReadLittleEndian<std::uint32_t>(p + pos);
    pos += 4;
    if (len > bytes.size() - pos) {
      return Status::DataLoss("federated message: update of " + std::to_string(len) + " bytes, " +
                              std::to_string(bytes.size() - pos) + " remain");
    }
    auto u = compression::Update::Decode(bytes.subspan(pos, len), limits);
    if (!u.ok()) return u.status().WithContext("federated message update " + std::to_string(i));
    if (u.value().EncodedSize() != len) return Status::DataLoss("federated message: update length mismatch");
    updates.push_back(std::make_shared<const compression::Update>(std::move(u).value()));
    pos += len;
  }
  if (pos != bytes.size()) {
    return Status::DataLoss("federated message: " + std::to_string(bytes.size() - pos) + " trailing bytes");
  }
  if (updates.size() == 2 && updates[0]->size() != updates[1]->size()) {
    return Status::DataLoss("federated message: the two updates differ in size");
  }
  return std::make_shared<const FedMessage>(h, std::move(updates));
}

}  // namespace murmur::federated
