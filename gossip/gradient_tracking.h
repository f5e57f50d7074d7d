// GradientTrackingNode: decentralized stochastic gradient tracking (DSGT;
// Pu and Nedic, Math. Programming 2021; Koloskova et al., NeurIPS 2021).
//
//   x_i <- sum_j W_ij (x_j - eta y_j)
//   y_i <- sum_j W_ij y_j + g_i(x_i new) - g_i(x_i old)
//
// y_i tracks the network-average gradient, which removes the bias that
// heterogeneous (non-IID) local objectives put into D-PSGD. Each round sends
// two vectors, x - eta y and y, to every out-neighbour.
//
// Catch-up (options.catch_up, static topologies): a node that finds an
// in-neighbour further ahead than the graph allows while every node waits
// (RoundTopology::InNeighbourLead), so that it was down and resumed from a
// checkpoint, ends its round at once and jumps to their round; the rounds it
// skips it takes no part in, on either side, which with a symmetric W keeps
// the tracking invariant sum_i y_i = sum_i g_i. A round only one side of a
// link mixed (the round a stopped node sent but could not finish, or a
// timeout race) would shift that sum for good, so with catch_up every tracker
// message also says which of the last kAckRounds rounds' vectors of the
// receiver its sender mixed, and a node that mixed a neighbour's vectors in a
// round the neighbour did not mix its own takes that mix out of y again:
// y_i -= W_ij (y_j - y_i) of that round (docs/algorithms.md "Catch-up").
//
// Thread-safety: as every gossip node, one Env executor.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <set>

#include "core/learner.h"
#include "core/round_observer.h"
#include "gossip/admission.h"
#include "gossip/codec.h"
#include "gossip/inbox.h"
#include "gossip/node.h"
#include "gossip/node_state.h"
#include "gossip/round_topology.h"
#include "gossip/silence.h"

namespace murmur::gossip {

struct GradientTrackingOptions {
  std::uint64_t rounds = 100;
  Nanos round_timeout = std::chrono::seconds(60);
  // The first round this node runs (a resume after round r starts at r).
  std::uint64_t first_round = 0;
  // Static topologies only: a neighbour two or more rounds ahead ends this
  // node's round at once and the node jumps to that round (as
  // DecentralizedSgdOptions::catch_up); off, a node behind waits out
  // round_timeout in every round it is behind.
  bool catch_up = false;
  // catch_up only: whether an in-neighbour is worth waiting for (a
  // membership view; empty: all are). One counted dead, or one whose vectors
  // were missing at SilentNeighbours::kRounds (3) timeouts in a row while counted alive,
  // is not waited for (its weight stays on this node's own vectors, as at a
  // timeout) until vectors of it are combined again, or, while no other
  // in-neighbour is waited for, until vectors of it come for the round it
  // went silent at or later (docs/security.md, "Insiders").
  std::function<bool(NodeId)> peer_alive;
  // Admission (gossip/admission.h): vectors of another length or encoding,
  // and trackers with non-finite values, are refused on arrival; a model
  // x_j farther than `plausibility` times ||x_i|| from the receiver's x_i
  // (or not finite) is refused when the round is combined, its weight left
  // on the receiver's own model (0: no distance bound). Trackers are
  // gradient estimates, whose honest spread near an optimum is large next
  // to their own norm, so they get no distance bound.
  double plausibility = 10;
};

class GradientTrackingNode final : public Node {
 public:
  // Rounds an acknowledgement covers: its mask travels as the tracker
  // message's f64 scalar, exact up to 52 bits.
  static constexpr std::uint64_t kAckRounds = 52;

  // REQUIRES: codec->full_model_safe().
  GradientTrackingNode(Env& env, RoundTopology& topology, LocalLearner& learner, ParamVector x0,
                       std::unique_ptr<Codec> codec, GradientTrackingOptions options,
                       RoundObserver* observer);

  void Start() override;
  void OnMessage(NodeId from, MessagePtr msg) override;
  // The state after the last completed round (gossip/node_state.h): x, the
  // tracker y and the previous gradient g (with catch_up also the rounds it
  // mixed and the mixes not yet matched). Call between rounds or once finished.
  Result<NodeState> ExportState() const override;
  // REQUIRES: before Start(), with options.first_round set. Start() then
  // skips y_0 = g(x_0) and goes on with the restored tracker.
  Status ImportState(const NodeState& state) override;

  const ParamVector& params() const override { return x_; }
  const ParamVector& tracker() const { return y_; }
  std::uint64_t round() const override { return round_; }
  // x, y, g, the previous x and g, and the two mixing sums.
  std::size_t state_floats() const override { return 7 * x_.size(); }
  bool finished() const { return round_ >= options_.rounds; }

 private:
  void BeginRound();
  void MaybeCombine();
  void Combine();
  // Adds W_ij u, a neighbour's model, to acc_x_, judging u in the same pass
  // (gossip/admission.h): the reason to refuse it, in which case acc_x_
  // holds it and must be summed again without it.
  std::optional<Refusal> MixModel(const compression::Update& u, float wij);
  std::uint64_t Latest(NodeId j) const;
  // catch_up: whether this round waits for j's vectors (alive, not gone past
  // it, not silent); counting the silent at a timeout; waiting again for a
  // silent one that lags.
  bool Waited(NodeId j) const;
  void CountSilent();
  void MaybeWaitAgain(NodeId j, std::uint64_t round);
  double AckMask(NodeId j) const;
  void OnAck(NodeId j, std::uint64_t round, double mask);

  Env& env_;
  RoundTopology& topology_;
  LocalLearner& learner_;
  std::unique_ptr<Codec> codec_;
  GradientTrackingOptions options_;
  UpdateAdmission admission_;
  std::vector<float> scratch_;  // a coded model decoded to be judged
  double own2_ = -1;            // BlockSquaredNorm(x_), taken with half_ (-1: x_ moved since)
  RoundObserver* observer_;

  ParamVector x_, y_, g_old_, g_new_, half_, acc_x_, acc_y_;
  RoundInbox inbox_;
  std::uint64_t round_ = 0;
  std::uint64_t ahead_ = 0;                 // catch_up: the highest round seen from an in-neighbour
  std::uint64_t lead_ = 1;                  // catch_up: RoundTopology::InNeighbourLead of this node
  std::map<NodeId, std::uint64_t> latest_;  // catch_up: the highest round seen from each
  // catch_up: the rounds (of the last kAckRounds) whose vectors of j this
  // node mixed; and W_ij (y_j - y_i) of each such mix j has not yet said it
  // matched, to be taken out of y if it did not.
  std::map<NodeId, std::set<std::uint64_t>> mixed_;
  std::map<NodeId, std::map<std::uint64_t, ParamVector>> unmatched_;
  ParamVector fix_;  // corrections not yet in y: they join it between rounds
  // catch_up: the in-neighbours that went silent (gossip/silence.h).
  SilentNeighbours silent_;
  bool combining_ = false;
  bool sent_ = false;
  bool ready_ = false;  // y_0 = g(x_0) computed
  TimerId timeout_ = 0;
  double loss_ = 0;
};

}  // namespace murmur::gossip
