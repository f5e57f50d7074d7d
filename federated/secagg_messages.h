// SecAggMessage: the wire messages of SecAgg+ secure aggregation
// (federated/secagg_client.h, federated/secagg_server.h; protocol in
// docs/protocol.md, "Secure aggregation (SecAgg+)").
//
// One message type with a stage byte; each stage uses only its own fields
// (the others stay empty, which the constructor checks):
//
//   stage               direction        fields
//   0 kAdvertiseKeys    client -> server keys (the sender's own, signed)
//   1 kKeyList          server -> client graph_seed, ids (U1, ascending), advertised (the neighbours' keys)
//   2 kShareKeys        client -> server sealed (peer = recipient)
//   3 kShareList        server -> client sealed (peer = sender)
//   4 kMaskedInput      client -> server masked (ring elements of Z_{2^32}), complaints
//                                        (neighbours whose sealed shares did not open)
//   5 kUnmaskRequest    server -> client ids (surviving neighbours), dropped (dropped neighbours),
//                                        excluded (neighbours excluded for a complaint)
//   6 kUnmaskShares     client -> server revealed
//   7 kAbort            client -> server reason
//
// Wire layout (little-endian), after the frame and envelope of node/:
//   u8 stage, u64 round, then by stage:
//   0: AdvertisedKeys                        (u32 node, 32 c_pk, 32 s_pk, 64 signature: 132 bytes)
//   1: 32 graph_seed, u32 n, n x u32, u32 m, m x AdvertisedKeys
//   2, 3: u32 m, m x (u32 peer, 104 sealed bytes)
//   4: u32 n, n x u32, then only when there are complaints: u32 c, c x u32 (ascending)
//   5: u32 n, n x u32, u32 m, m x u32, then only when some are excluded: u32 e, e x u32 (ascending)
//   6: u32 m, m x (u32 owner, u8 what (0 self-mask seed, 1 mask key, 2 pairwise mask seed),
//      5 x u64 values: a share, or for 2 the seed's five 7-byte chunks as Shamir cuts a secret)
//   7: u8 reason
// The sealed plaintext (88 bytes) is u32 from, u32 to, the 5 share values of
// the sender's self-mask seed b and the 5 of its mask key s^SK at x = to + 1.
//
// Thread-safety: immutable after construction.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "core/env.h"
#include "core/status.h"
#include "crypto/identity.h"
#include "crypto/key_agreement.h"
#include "crypto/shamir.h"

namespace murmur::federated {

inline constexpr std::uint32_t kSecAggMessageKind = 0x21;

enum class SecAggStage : std::uint8_t {
  kAdvertiseKeys = 0,
  kKeyList = 1,
  kShareKeys = 2,
  kShareList = 3,
  kMaskedInput = 4,
  kUnmaskRequest = 5,
  kUnmaskShares = 6,
  kAbort = 7,
};

// Why a client abandoned a round (it reveals nothing after it).
enum class SecAggAbortReason : std::uint8_t {
  kBadKeyList = 1,        // wrong neighbours, bad signature, repeated keys
  kTooFewNeighbours = 2,  // a neighbourhood (or its survivors) below the threshold
  kBadShares = 3,         // a sealed share that does not open
  kBadUnmaskRequest = 4,  // a node both dropped and surviving, or not a neighbour
  kOutOfOrder = 5,        // a message for a stage the client is not in
};

struct AdvertisedKeys {
  static constexpr std::size_t kBytes = 4 + 2 * crypto::kDhKeySize + crypto::kSignatureSize;
  NodeId node = 0;
  crypto::DhPublicKey c_pk{};  // encrypts the shares sent to this node
  crypto::DhPublicKey s_pk{};  // agrees the pairwise masks
  crypto::Signature signature{};
};

inline constexpr std::size_t kSharePlainBytes = 4 + 4 + 2 * crypto::kShamirChunks * 8;
inline constexpr std::size_t kSealedShareBytes = kSharePlainBytes + crypto::kSealOverhead;

struct SealedShare {
  NodeId peer = 0;
  std::array<std::uint8_t, kSealedShareBytes> bytes{};
};

// kPairSeed: the pairwise mask seed s_{u,owner} itself (not a share), which a
// client reveals for a neighbour excluded for a complaint.
enum class RevealedKind : std::uint8_t { kSelfMaskSeed = 0, kMaskKey = 1, kPairSeed = 2 };

struct RevealedShare {
  NodeId owner = 0;
  RevealedKind what = RevealedKind::kSelfMaskSeed;
  std::array<crypto::FieldElement, crypto::kShamirChunks> y{};
};

struct SecAggBody {
  AdvertisedKeys keys;
  crypto::MaskSeed graph_seed{};
  std::vector<NodeId> ids;
  std::vector<NodeId> dropped;
  std::vector<NodeId> complaints;  // kMaskedInput, ascending
  std::vector<NodeId> excluded;    // kUnmaskRequest, ascending
  std::vector<AdvertisedKeys> advertised;
  std::vector<SealedShare> sealed;
  std::vector<std::uint32_t> masked;
  std::vector<RevealedShare> revealed;
  SecAggAbortReason reason = SecAggAbortReason::kOutOfOrder;
};

class SecAggMessage final : public Message {
 public:
  // REQUIRES: the fields not used by `stage` are empty.
  SecAggMessage(SecAggStage stage, std::uint64_t round, SecAggBody body);

  std::uint32_t kind() const override { return kSecAggMessageKind; }
  std::size_t EncodedSize() const override;
  void EncodeTo(std::vector<std::uint8_t>& out) const override;

  // Parses a message; malformed input gives a Status naming the field. Counts
  // are checked against the bytes that remain before anything is allocated.
  static Result<std::shared_ptr<const SecAggMessage>> Decode(std::span<const std::uint8_t> bytes);

  SecAggStage stage() const { return stage_; }
  std::uint64_t round() const { return round_; }
  const SecAggBody& body() const { return body_; }

 private:
  SecAggStage stage_;
  std::uint64_t round_;
  SecAggBody body_;
};

// The bytes a client signs for its advertised keys: "murmur secagg keys v1",
// u64 round, u32 node, c_pk, s_pk.
std::vector<std::uint8_t> AdvertisedKeysSignedBytes(std::uint64_t round, const AdvertisedKeys& keys);

}  // namespace murmur::federated
