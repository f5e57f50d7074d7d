// SecAggServer: the aggregator's side of one SecAgg+ round (Bonawitz et al.
// 2017, Fig. 4; Bell et al. 2020), transport-agnostic (core::Env only). It
// learns the sum of the surviving clients' quantized inputs and nothing else.
//
//   AdvertiseKeys  collects signed keys from the selected clients -> U1 (at
//                  least min_participants, else abort); draws the graph seed
//                  and sends each client the participants and its neighbours' keys.
//   ShareKeys      collects sealed shares -> U2; forwards to each client the
//                  shares its neighbours in U2 sealed for it.
//   MaskedInput    collects masked inputs -> U3 (at least min_participants).
//                  Clients that shared keys but sent no input are "dropped".
//                  A client complained of (its sealed shares did not open
//                  at a neighbour) is "excluded": its input, if any, stays
//                  out of the sum (docs/protocol.md, "Complaints"), but
//                  it still reveals its shares of its neighbours' secrets.
//   Unmasking      asks each survivor for its neighbours' shares (b for
//                  survivors, s^SK for the dropped), reconstructs every
//                  survivor's b_u and every dropped client's s_u^SK from t
//                  shares each, removes PRG(b_u) and the dropped clients'
//                  pairwise masks, takes out the masks survivors added for
//                  excluded clients with the pairwise seeds they reveal,
//                  and dequantizes the sum.
//
// A stage closes when every client still expected has answered, aborted or
// been reported gone (ClientGone: the transport or churn says so), or at its
// timeout. When some secret cannot be reconstructed (fewer than t shares)
// the round aborts: `done` gets the Status, and the server holds only masked
// inputs, each uniform in Z_{2^32}^d to it.
//
// Thread-safety: one Env executor. `done` is called once, from that executor.
#pragma once

#include <functional>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/env.h"
#include "core/status.h"
#include "federated/secagg_client.h"
#include "federated/secagg_messages.h"

namespace murmur::federated {

struct SecAggServerOptions {
  SecAggParams params;
  std::size_t length = 0;           // input length (ring elements per client)
  Nanos key_timeout{0};             // AdvertiseKeys, ShareKeys and Unmasking (0: no timeout)
  Nanos input_timeout{0};           // MaskedInput: covers local training (0: no timeout)
  SignKeyDirectory directory;       // the server checks signatures too (null: it does not)
  bool deterministic_seed = false;  // graph seed from Env::MakeRng (simulations) instead of randombytes
};

struct SecAggOutcome {
  Status status;                    // Aborted when the round could not be unmasked
  std::vector<double> sum;          // sum over the survivors of their (clipped) inputs
  std::vector<NodeId> survivors;    // U3
  std::size_t dropped = 0;          // |U2 \ U3|
  std::size_t clients_aborted = 0;  // clients that sent Abort
  std::vector<NodeId> excluded;     // clients left out for a complaint, ascending
  // (complainer, accused): the sealed shares of `accused` did not open at
  // `complainer`. One of the two misbehaved; which one, the server cannot tell.
  std::vector<std::pair<NodeId, NodeId>> complaints;
  double error_bound = 0;  // quantization error bound per coordinate (|U3| R / (2^bits - 1))
};

class SecAggServer {
 public:
  enum class Stage { kAdvertise, kShare, kInput, kUnmask, kDone };

  SecAggServer(Env& env, std::uint64_t round, std::vector<NodeId> selected, SecAggServerOptions options,
               std::function<void(SecAggOutcome)> done);
  ~SecAggServer();

  void Start();
  void OnMessage(NodeId from, const SecAggMessage& m);
  // The client is gone (offline, disconnected): stop waiting for it.
  void ClientGone(NodeId client);

  Stage stage() const { return stage_; }
  std::uint64_t round() const { return round_; }
  // The masked inputs received (what the server holds if the round aborts).
  const std::map<NodeId, std::vector<std::uint32_t>>& masked_inputs() const { return masked_; }

 private:
  void Expect(const std::set<NodeId>& who, Nanos timeout);
  void MaybeAdvance();
  void CloseStage();
  void SendKeyLists();
  void SendShareLists();
  void Exclude();
  bool Complained(NodeId v, NodeId u) const;  // v complained of u
  bool InSum(NodeId u) const;                 // u sent its masked input and is not excluded
  std::size_t InSum() const;
  void SendUnmaskRequests();
  void Unmask();
  void Finish(Status status);

  Env& env_;
  std::uint64_t round_;
  std::vector<NodeId> selected_;
  SecAggServerOptions options_;
  std::function<void(SecAggOutcome)> done_;
  Stage stage_ = Stage::kAdvertise;
  std::set<NodeId> waiting_;  // clients the current stage still waits for
  TimerId timer_ = 0;
  std::uint64_t timer_epoch_ = 0;
  crypto::MaskSeed graph_seed_{};
  std::map<NodeId, AdvertisedKeys> keys_;                  // U1
  std::map<NodeId, std::vector<NodeId>> neighbours_;       // graph over U1
  std::map<NodeId, std::vector<SealedShare>> inbox_;       // sealed shares by recipient (peer = sender)
  std::set<NodeId> shared_;                                // U2
  std::map<NodeId, std::vector<std::uint32_t>> masked_;    // U3
  std::map<NodeId, std::vector<RevealedShare>> revealed_;  // by revealing client
  std::set<NodeId> aborted_;
  std::map<NodeId, std::set<NodeId>> complaints_;  // by complainer
  std::set<NodeId> excluded_;
  SecAggOutcome outcome_;
};

}  // namespace murmur::federated
