// SecAggClient: one client's side of one SecAgg+ round (Bonawitz et al.,
// CCS 2017, Fig. 4 rounds 0-3, with the neighbour graph of Bell et al.,
// CCS 2020), transport-agnostic: it acts only through core::Env, so the
// simulator and a daemon can host it alike. Messages: federated/secagg_messages.h.
//
//   Start()           round 0: two fresh X25519 key pairs (c for share
//                     encryption, s for masks), signed with the node's
//                     Ed25519 identity, go to the server (AdvertiseKeys).
//   KeyList           round 1: checks the neighbour keys, Shamir-shares its
//                     self-mask seed b_u and mask key s_u^SK among its k
//                     neighbours with threshold t, and sends each share pair
//                     sealed to its neighbour (ShareKeys).
//   ShareList         round 2: opens the shares addressed to it (a neighbour
//                     whose shares do not open is complained of and left
//                     out of the masks: docs/protocol.md, "Complaints"); with
//                     SetInput(values) it sends y_u = q_u + PRG(b_u) +
//                     sum_v sign(u, v) PRG(s_{u,v}) over the neighbours v that
//                     shared (sign +1 when u < v, -1 otherwise; MaskedInput).
//   UnmaskRequest     round 3: for each surviving neighbour reveals its share
//                     of b_v, for each dropped one its share of s_v^SK, for
//                     each one excluded for a complaint the pairwise seed
//                     s_{u,v} (UnmaskShares).
//
// The client refuses the server's tricks and then aborts, revealing nothing
// more (and sends Abort so that the server need not wait): neighbour keys that
// are not exactly its graph neighbours, bad signatures, repeated keys,
// participants listed twice, fewer than t neighbours (or surviving
// neighbours), a node listed both as dropped and as surviving, a neighbour it
// never got shares from, a second unmask request, or any message out of order.
// It never reveals both kinds of share of one neighbour.
//
// Secrets come from libsodium's randombytes; `deterministic_secrets` draws
// them from Env::MakeRng instead, which makes simulations reproducible and is
// NOT secret (simulation and tests only).
//
// Thread-safety: one Env executor. `identity` must outlive the client.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/env.h"
#include "crypto/identity.h"
#include "crypto/key_agreement.h"
#include "federated/secagg_messages.h"
#include "federated/secagg_quantizer.h"

namespace murmur::federated {

// The Ed25519 public key of a node, or null when the node is unknown.
using SignKeyDirectory = std::function<const crypto::SignPublicKey*(NodeId)>;

// Parameters every party of a round must agree on.
struct SecAggParams {
  std::size_t neighbours = 0;        // k, even (0: all other participants, as in SecAgg)
  double threshold = 0.5;            // t = max(floor(k/2) + 1, ceil(threshold k))
  std::size_t min_participants = 3;  // fewer advertised clients: the round aborts
  QuantizerOptions quantizer;
};

struct SecAggClientOptions {
  SecAggParams params;
  const crypto::Identity* identity = nullptr;  // signs the advertised keys (required)
  SignKeyDirectory directory;                  // checks the neighbours' signatures (required)
  bool deterministic_secrets = false;          // simulation only, see above
  // Fault injection (simulation, tests): the client goes silent right after ShareKeys.
  bool silent_after_share_keys = false;
};

class SecAggClient {
 public:
  enum class State { kIdle, kAdvertised, kShared, kHaveShares, kSentInput, kDone, kSilent, kAborted };

  SecAggClient(Env& env, NodeId server, std::uint64_t round, SecAggClientOptions options);
  ~SecAggClient();

  void Start();
  // The client's input (pre-scaled; quantized here). May come before or after
  // the ShareList; the masked input goes out when both are there.
  void SetInput(std::span<const double> values);
  void OnMessage(NodeId from, const SecAggMessage& m);

  State state() const { return state_; }
  bool aborted() const { return state_ == State::kAborted; }
  const std::string& abort_reason() const { return abort_reason_; }
  std::size_t shares_revealed() const { return shares_revealed_; }
  std::uint64_t round() const { return round_; }

 private:
  struct Neighbour {
    AdvertisedKeys keys;
    bool shared = false;      // its sealed shares reached us and opened (it is in U2 for us)
    bool complained = false;  // its sealed shares reached us and did not open
    RevealedShare b_share, s_share;
  };
  void OnKeyList(const SecAggMessage& m);
  void OnShareList(const SecAggMessage& m);
  void OnUnmaskRequest(const SecAggMessage& m);
  void MaybeSendMasked();
  void Abort(SecAggAbortReason reason, std::string why);
  void Send(SecAggStage stage, SecAggBody body);

  Env& env_;
  NodeId server_;
  std::uint64_t round_;
  SecAggClientOptions options_;
  State state_ = State::kIdle;
  std::string abort_reason_;
  crypto::DhKeyPair c_keys_, s_keys_;
  crypto::MaskSeed self_seed_{}, coins_{};
  std::size_t threshold_ = 0;
  std::map<NodeId, Neighbour> neighbours_;
  std::vector<std::uint32_t> input_;
  bool has_input_ = false;
  std::size_t shares_revealed_ = 0;
};

}  // namespace murmur::federated
