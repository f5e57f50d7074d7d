#include "membership/messages.h"

#include <cstring>

#include "core/bytes.h"
#include "core/check.h"

namespace murmur::membership {

const char* MemberStateName(MemberState s) {
  switch (s) {
    case MemberState::kAlive: return "alive";
    case MemberState::kSuspect: return "suspect";
    case MemberState::kDead: return "dead";
    case MemberState::kLeft: return "left";
  }
  return "unknown";
}

std::shared_ptr<const MembershipMessage> MembershipMessage::Make(const MembershipHeader& header,
                                                                 std::vector<MemberUpdate> updates,
                                                                 const MembershipSigner& signer) {
  auto unsigned_msg = MembershipMessage(header, std::move(updates), crypto::Signature{});
  crypto::Signature sig = signer.Sign(unsigned_msg.SignedBytes());
  return std::make_shared<const MembershipMessage>(header, std::move(unsigned_msg.updates_), sig);
}

MembershipMessage::MembershipMessage(const MembershipHeader& header, std::vector<MemberUpdate> updates,
                                     const crypto::Signature& signature)
    : header_(header), updates_(std::move(updates)), signature_(signature) {
  MURMUR_CHECK(updates_.size() <= 0xFFFF);
  for (const MemberUpdate& u : updates_)
    MURMUR_CHECK(u.address.size() <= 0xFF && u.credential.size() <= 0xFFFF);
}

std::vector<std::uint8_t> StatementBytes(const MemberUpdate& u) {
  std::vector<std::uint8_t> out(kMemberStatementContext.size());
  std::memcpy(out.data(), kMemberStatementContext.data(), out.size());
  out.push_back(static_cast<std::uint8_t>(u.state));
  AppendLittleEndian<std::uint32_t>(out, u.member);
  AppendLittleEndian<std::uint64_t>(out, u.incarnation);
  out.push_back(static_cast<std::uint8_t>(u.address.size()));
  out.insert(out.end(), u.address.begin(), u.address.end());
  return out;
}

std::size_t MembershipMessage::EncodedSize() const {
  std::size_t n = kHeaderBytes + crypto::kSignatureSize;
  for (const MemberUpdate& u : updates_) n += u.EncodedSize();
  return n;
}

void MembershipMessage::EncodeBody(std::vector<std::uint8_t>& out) const {
  out.push_back(static_cast<std::uint8_t>(header_.type));
  AppendLittleEndian<std::uint32_t>(out, header_.sender);
  AppendLittleEndian<std::uint32_t>(out, header_.receiver);
  AppendLittleEndian<std::uint32_t>(out, header_.seq);
  AppendLittleEndian<std::uint32_t>(out, header_.target);
  AppendLittleEndian<std::uint16_t>(out, static_cast<std::uint16_t>(updates_.size()));
  for (const MemberUpdate& u : updates_) {
    out.push_back(static_cast<std::uint8_t>(u.state));
    AppendLittleEndian<std::uint32_t>(out, u.member);
    AppendLittleEndian<std::uint64_t>(out, u.incarnation);
    AppendLittleEndian<std::uint32_t>(out, u.origin);
    out.push_back(static_cast<std::uint8_t>(u.address.size()));
    out.insert(out.end(), u.address.begin(), u.address.end());
    if (!u.IsStatement()) continue;
    out.insert(out.end(), u.statement.begin(), u.statement.end());
    AppendLittleEndian<std::uint16_t>(out, static_cast<std::uint16_t>(u.credential.size()));
    out.insert(out.end(), u.credential.begin(), u.credential.end());
  }
}

void MembershipMessage::EncodeTo(std::vector<std::uint8_t>& out) const {
  EncodeBody(out);
  out.insert(out.end(), signature_.begin(), signature_.end());
}

std::vector<std::uint8_t> MembershipMessage::SignedBytes() const {
  // Sized and copied rather than inserted: GCC 12 warns falsely (stringop-overflow) on the insert.
  std::vector<std::uint8_t> out(kMembershipSignatureContext.size());
  std::memcpy(out.data(), kMembershipSignatureContext.data(), out.size());
  out.reserve(out.size() + EncodedSize() - crypto::kSignatureSize);
  EncodeBody(out);
  return out;
}

Result<std::shared_ptr<const MembershipMessage>> MembershipMessage::Decode(
    std::span<const std::uint8_t> bytes, const MembershipDecodeLimits& limits) {
  constexpr std::size_t kMinBytes = kHeaderBytes + crypto::kSignatureSize;
  if (bytes.size() < kMinBytes) {
    return Status::DataLoss("membership message of " + std::to_string(bytes.size()) +
                            " bytes is shorter than its " + std::to_string(kMinBytes) +
                            "-byte header and signature");
  }
  const std::uint8_t* p = bytes.data();
  MembershipHeader h;
  if (p[0] < 1 || p[0] > kMaxMembershipType) {
    return Status::InvalidArgument("membership message type " + std::to_string(p[0]) + " is unknown");
  }
  h.type = static_cast<MembershipType>(p[0]);
  h.sender = ReadLittleEndian<std::uint32_t>(p + 1);
  h.receiver = ReadLittleEndian<std::uint32_t>(p + 5);
  h.seq = ReadLittleEndian<std::uint32_t>(p + 9);
  h.target = ReadLittleEndian<std::uint32_t>(p + 13);
  const std::size_t count = ReadLittleEndian<std::uint16_t>(p + 17);
  if (count > limits.max_updates) {
    return Status::ResourceExhausted("membership message carries " + std::to_string(count) +
                                     " updates, over the limit of " + std::to_string(limits.max_updates));
  }
  // Every update takes at least kFixedBytes: check the count against what is there before reserving.
  const std::size_t body_end = bytes.size() - crypto::kSignatureSize;
  if (count * MemberUpdate::kFixedBytes > body_end - kHeaderBytes) {
    return Status::DataLoss("membership message announces " + std::to_string(count) + " updates but has " +
                            std::to_string(body_end - kHeaderBytes) + " bytes for them");
  }
  std::vector<MemberUpdate> updates;
  updates.reserve(count);
  std::size_t pos = kHeaderBytes;
  for (std::size_t i = 0; i < count; ++i) {
    if (body_end - pos < MemberUpdate::kFixedBytes) {
      return Status::DataLoss("membership update " + std::to_string(i) + " is truncated");
    }
    MemberUpdate u;
    if (p[pos] > kMaxMemberState) {
      return Status::InvalidArgument("membership update " + std::to_string(i) + " has unknown state " +
                                     std::to_string(p[pos]));
    }
    u.state = static_cast<MemberState>(p[pos]);
    u.member = ReadLittleEndian<std::uint32_t>(p + pos + 1);
    u.incarnation = ReadLittleEndian<std::uint64_t>(p + pos + 5);
    u.origin = ReadLittleEndian<std::uint32_t>(p + pos + 13);
    const std::size_t address_bytes = p[pos + 17];
    pos += MemberUpdate::kFixedBytes;
    if (address_bytes > limits.max_address_bytes) {
      return Status::ResourceExhausted("membership update " + std::to_string(i) + " has a " +
                                       std::to_string(address_bytes) + "-byte address, over the limit of " +
                                       std::to_string(limits.max_address_bytes));
    }
    if (body_end - pos < address_bytes) {
      return Status::DataLoss("membership update " + std::to_string(i) + " address is truncated");
    }
    u.address.assign(reinterpret_cast<const char*>(p + pos), address_bytes);
    pos += address_bytes;
    if (u.IsStatement()) {
      if (u.origin != u.member) {
        return Status::InvalidArgument("membership update " + std::to_string(i) + " (" +
                                       MemberStateName(u.state) + " of member " + std::to_string(u.member) +
                                       ") has origin " + std::to_string(u.origin) +
                                       ": alive and left are the member's own statements");
      }
      if (body_end - pos < MemberUpdate::kStatementFixedBytes) {
        return Status::DataLoss("membership update " + std::to_string(i) + " statement is truncated");
      }
      std::memcpy(u.statement.data(), p + pos, u.statement.size());
      const std::size_t credential_bytes = ReadLittleEndian<std::uint16_t>(p + pos + crypto::kSignatureSize);
      pos += MemberUpdate::kStatementFixedBytes;
      if (credential_bytes > limits.max_credential_bytes) {
        return Status::ResourceExhausted(
            "membership update " + std::to_string(i) + " has a " + std::to_string(credential_bytes) +
            "-byte credential, over the limit of " + std::to_string(limits.max_credential_bytes));
      }
      if (body_end - pos < credential_bytes) {
        return Status::DataLoss("membership update " + std::to_string(i) + " credential is truncated");
      }
      u.credential.assign(p + pos, p + pos + credential_bytes);
      pos += credential_bytes;
    }
    updates.push_back(std::move(u));
  }
  if (pos != body_end) {
    return Status::DataLoss("membership message has " + std::to_string(body_end - pos) +
                            " bytes after its updates");
  }
  crypto::Signature sig;
  for (std::size_t i = 0; i < sig.size(); ++i) sig[i] = p[body_end + i];
  return std::make_shared<const MembershipMessage>(h, std::move(updates), sig);
}

MessageDecoder MembershipDecoder(const MembershipDecodeLimits& limits) {
  return [limits](std::span<const std::uint8_t> bytes) -> Result<MessagePtr> {
    MURMUR_ASSIGN_OR_RETURN(auto msg, MembershipMessage::Decode(bytes, limits));
    return MessagePtr(std::move(msg));
  };
}

}  // namespace murmur::membership
