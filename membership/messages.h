// MembershipMessage: what SWIM / Lifeguard membership nodes send each other
// (membership/membership.h), signed by their sender.
//
// Every message has a type (PING, ACK, PING-REQ, NACK, JOIN, SYNC), the
// sender's and the receiver's node ids, a sequence number and a target, and
// piggybacks a bounded list of membership updates ("member m is alive /
// suspect / dead / left at incarnation i, according to origin o"). The
// sender's Ed25519 signature covers a context string and every byte before it,
// so a relayed ACK or a gossiped suspicion is attributable to the member that
// sent it; binding the receiver's id stops a message meant for one member
// from being replayed to another.
//
// An alive or left update is the member's own statement, whoever relays it:
// it carries the member's Ed25519 signature over StatementBytes (state,
// member, incarnation, address) and a credential that proves the key is the
// member's (the daemon's: its coordinator-signed certificate, which binds
// the node id; empty where every receiver knows the keys). So no third party
// can bring a member into a view, or point its address elsewhere
// (docs/membership.md "Signed statements").
//
// Wire layout (little-endian; docs/membership.md has it byte by byte):
//   u8  type        1 PING, 2 ACK, 3 PING-REQ, 4 NACK, 5 JOIN, 6 SYNC
//   u32 sender
//   u32 receiver
//   u32 seq
//   u32 target      (0xFFFFFFFF when the type has none)
//   u16 U           number of updates, <= MembershipDecodeLimits::max_updates
//   U x { u8 state (0 alive, 1 suspect, 2 dead, 3 left), u32 member,
//         u64 incarnation, u32 origin, u8 A, A address bytes,
//         alive and left only: 64-byte statement signature, u16 C, C credential bytes }
//   64 bytes        Ed25519 signature over kMembershipSignatureContext || all bytes above
//
// There is exactly one encoding per message: the decoder refuses unknown
// types and states, over-long lists and addresses, and any trailing byte.
//
// Thread-safety: immutable after construction.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/env.h"
#include "core/message_decoder.h"
#include "core/status.h"
#include "crypto/identity.h"

namespace murmur::membership {

inline constexpr std::uint32_t kMembershipMessageKind = 0x11;
// Domain separation: a membership signature is never valid for another purpose.
inline constexpr std::string_view kMembershipSignatureContext = "murmur-membership-v1";
inline constexpr std::string_view kMemberStatementContext = "murmur-member-statement-v1";

enum class MembershipType : std::uint8_t {
  kPing = 1,     // "are you alive?"; target = the receiver
  kAck = 2,      // answer to a PING (seq copied); target = the member that answered
  kPingReq = 3,  // "probe target for me"; seq = the requester's probe
  kNack = 4,     // relay's "target did not answer in time" (Lifeguard); seq = the requester's
  kJoin = 5,     // "merge these updates and send me your full state" (join, anti-entropy)
  kSync = 6,     // "merge these updates" (state transfer, graceful leave)
};
inline constexpr std::uint8_t kMaxMembershipType = 6;

enum class MemberState : std::uint8_t { kAlive = 0, kSuspect = 1, kDead = 2, kLeft = 3 };
inline constexpr std::uint8_t kMaxMemberState = 3;
const char* MemberStateName(MemberState s);

// One piggybacked membership update (SWIM section 4.2, with Lifeguard's
// "origin" so independent suspicions can be counted).
struct MemberUpdate {
  MemberState state = MemberState::kAlive;
  NodeId member = kNoNode;
  std::uint64_t incarnation = 0;
  NodeId origin = kNoNode;  // alive / left: the member itself; suspect / dead: who declared it
  std::string address;      // opaque to membership (the daemon's "host:port"); <= 255 bytes
  // Alive and left only: the member's signature over StatementBytes(*this),
  // and the credential that proves its key (empty: the receiver knows it).
  crypto::Signature statement{};
  std::vector<std::uint8_t> credential{};  // <= 65535 bytes

  bool IsStatement() const { return state == MemberState::kAlive || state == MemberState::kLeft; }
  static constexpr std::size_t kFixedBytes = 1 + 4 + 8 + 4 + 1;
  static constexpr std::size_t kStatementFixedBytes = crypto::kSignatureSize + 2;
  std::size_t EncodedSize() const {
    return kFixedBytes + address.size() + (IsStatement() ? kStatementFixedBytes + credential.size() : 0);
  }
  friend bool operator==(const MemberUpdate&, const MemberUpdate&) = default;
};

// What a member signs for its own alive or left update:
// kMemberStatementContext || u8 state || u32 member || u64 incarnation || u8 A || address.
std::vector<std::uint8_t> StatementBytes(const MemberUpdate& u);

struct MembershipHeader {
  MembershipType type = MembershipType::kPing;
  NodeId sender = kNoNode;
  NodeId receiver = kNoNode;
  std::uint32_t seq = 0;
  NodeId target = kNoNode;
  friend bool operator==(const MembershipHeader&, const MembershipHeader&) = default;
};

struct MembershipDecodeLimits {
  std::size_t max_updates = 64;            // per message (a SYNC carries a state chunk of at most 64)
  std::size_t max_address_bytes = 128;     // per update
  std::size_t max_credential_bytes = 512;  // per statement (a certificate is at most 195)
};

// Produces the sender's signature over a message's signed bytes (and over
// its own statements), and the credential its statements carry.
class MembershipSigner {
 public:
  virtual ~MembershipSigner() = default;
  virtual crypto::Signature Sign(std::span<const std::uint8_t> signed_bytes) const = 0;
  // Proof that the signing key is this member's, attached to its alive and
  // left statements (the daemon: its certificate). Empty by default.
  virtual std::vector<std::uint8_t> Credential() const { return {}; }
};

// What a member's statement is worth to a verifier.
enum class StatementCheck {
  kValid,       // signed by the member's key
  kUnknownKey,  // no key to check it with (no usable credential, none known): ignored
  kForged,      // a credential or signature that does not check out: its relay misbehaves
};
struct StatementVerdict {
  StatementCheck check = StatementCheck::kUnknownKey;
  crypto::SignPublicKey key{};  // kValid: the key it verified with
};

// Checks a signature against the public key of the claimed sender; false when
// the sender is unknown or the signature does not verify.
class MembershipVerifier {
 public:
  virtual ~MembershipVerifier() = default;
  virtual bool Verify(NodeId sender, std::span<const std::uint8_t> signed_bytes,
                      const crypto::Signature& signature) const = 0;
  // Checks an alive or left update as the statement of `u.member`: its
  // signature over StatementBytes(u), with the key that u.credential proves
  // (or a key the verifier already holds for that member).
  virtual StatementVerdict VerifyStatement(const MemberUpdate& u) const = 0;
};

class MembershipMessage final : public Message {
 public:
  static constexpr std::size_t kHeaderBytes = 1 + 4 + 4 + 4 + 4 + 2;

  // Signs (header, updates) with `signer`. REQUIRES: at most 65535 updates,
  // addresses of at most 255 bytes, credentials of at most 65535 (Membership
  // keeps all three far lower). Statements must be signed already.
  static std::shared_ptr<const MembershipMessage> Make(const MembershipHeader& header,
                                                       std::vector<MemberUpdate> updates,
                                                       const MembershipSigner& signer);
  MembershipMessage(const MembershipHeader& header, std::vector<MemberUpdate> updates,
                    const crypto::Signature& signature);

  std::uint32_t kind() const override { return kMembershipMessageKind; }
  std::size_t EncodedSize() const override;
  void EncodeTo(std::vector<std::uint8_t>& out) const override;

  // Parses a message under `limits`; checks every count and length before
  // allocating for it. Does not check the signature (see Verify).
  static Result<std::shared_ptr<const MembershipMessage>> Decode(std::span<const std::uint8_t> bytes,
                                                                 const MembershipDecodeLimits& limits);

  // kMembershipSignatureContext || the encoding without the signature.
  std::vector<std::uint8_t> SignedBytes() const;
  bool Verify(const MembershipVerifier& verifier) const {
    return verifier.Verify(header_.sender, SignedBytes(), signature_);
  }

  const MembershipHeader& header() const { return header_; }
  const std::vector<MemberUpdate>& updates() const { return updates_; }
  const crypto::Signature& signature() const { return signature_; }

 private:
  void EncodeBody(std::vector<std::uint8_t>& out) const;

  MembershipHeader header_;
  std::vector<MemberUpdate> updates_;
  crypto::Signature signature_{};
};

// The decoder a host registers for kind kMembershipMessageKind
// (core/message_decoder.h); the signature is checked later, by Membership.
MessageDecoder MembershipDecoder(const MembershipDecodeLimits& limits = {});

}  // namespace murmur::membership
