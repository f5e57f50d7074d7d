// DecentralizedSgdNode: D-PSGD and CHOCO-SGD on one node.
//
// Each synchronous round t, node i trains H local steps and averages with its
// in-neighbours under the round's mixing matrix W_t:
//   adapt-then-combine (ATC):  x_i <- sum_j W_ij (x_j - eta g_j)
//   combine-then-adapt (CTA):  x_i <- sum_j W_ij x_j - eta g_i(x_i)
// (Lian et al., NeurIPS 2017, Alg. 1, is CTA with H = 1; ATC is the order of
// Sayed 2014 and of most implementations.) In CTA the model goes out before
// training starts, so communication overlaps computation.
//
// How models travel depends on the codec:
//  - lossless or a value coding (fp16, bf16, int8) on the full model: the
//    receiver mixes what it gets, sum_j W_ij x_j, directly;
//  - a sparsifier or any biased compressor: CHOCO-SGD (Koloskova, Stich and
//    Jaggi, ICML 2019, Alg. 1 in its memory-efficient form, App. E): every node
//    keeps a public copy x^_i that all its neighbours also hold, sends
//    q_i = C(x_i - x^_i), updates x^_i += q_i, and keeps
//    s_i = sum_j W_ij x^_j from the q's it receives; then
//    x_i <- x_i + gamma (s_i - x^_i). What C leaves out stays in x_i - x^_i
//    and goes out later: this is error feedback. gamma = 1 with a lossless C
//    is exactly D-PSGD. The CHOCO form needs a static W.
//
// With whole models the node can mix robustly (options.mixing, see
// gossip/robust_mixing.h): ClippedGossip clips each neighbour's pull
// x_j - x_i before mixing, the neighbourhood median and trimmed mean replace
// the weighted sum. CHOCO mixes only with `mean`.
//
// With the lossless fp32 codec ("none") the outgoing message shares the
// node's model buffer instead of copying it: the node mixes into a second
// buffer and swaps, and writes a buffer again only once no message holds it
// (otherwise it takes a fresh one). Results are the same either way.
//
// CHOCO resynchronisation (with options.catch_up; docs/algorithms.md
// "Catch-up"): a node that resumes from a checkpoint holds x^_i as of that
// checkpoint, while its neighbours hold x^_i advanced by every difference it
// sent before it stopped, and their own x^_j moved on without it. So each
// node keeps the x^_j of every in-neighbour (s = W_ii x^_i + sum_j W_ij x^_j
// as before, kept incrementally), and a resuming node sends every neighbour
// its x^_i whole (channel kResync) and asks for theirs. A receiver replaces
// its copy, moves s by W_ij (x^_j new - x^_j held), forgets the differences
// of that sender it still holds (the copy includes them) and answers with
// its own x^. Afterwards every copy equals its owner's x^ again, and CHOCO's
// invariant holds; the resumed node skips the rounds it missed (sending
// nothing in them, so its x^ stands still as everyone's copy of it does).
//
// DiLoCo over gossip (options.outer, adapt-then-combine only): the H local
// steps are the inner phase, started from x_start, and the round's mixing
// result x_mix (whatever the codec: whole models or CHOCO) defines the agreed
// pseudo-gradient
//   g = x_start - x_mix = sum_j W_ij (x_start - x_j,end),
// the in-neighbours' pseudo-gradients measured from this node's start (with
// exact averaging and a common start: DiLoCo's mean of the nodes'
// pseudo-gradients); gossip/outer_optimizer.h then takes the outer step.
// Outer SGD at rate 1 leaves x = x_mix: D-PSGD with H local steps, bit for bit.
//
// A round ends when a message from every in-neighbour has arrived or after
// `round_timeout`; a neighbour that missed the deadline is left out of the
// round and its weight falls back on the node itself.
//
// Thread-safety: one node per Env executor; the Env calls it from one thread.
// The code: decentralized_sgd.cc (the rounds), decentralized_sgd_mix.cc (a
// round's mix), decentralized_sgd_state.cc (resync, late messages, the state
// a daemon checkpoints).
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <vector>

#include "core/env.h"
#include "core/learner.h"
#include "core/local_tensors.h"
#include "core/param_vector.h"
#include "core/round_observer.h"
#include "gossip/admission.h"
#include "gossip/codec.h"
#include "gossip/inbox.h"
#include "gossip/node.h"
#include "gossip/node_state.h"
#include "gossip/outer_optimizer.h"
#include "gossip/robust_mixing.h"
#include "gossip/round_topology.h"
#include "gossip/silence.h"

namespace murmur::gossip {

enum class MixOrder { kAdaptThenCombine, kCombineThenAdapt };

struct DecentralizedSgdOptions {
  MixOrder order = MixOrder::kAdaptThenCombine;
  std::uint64_t rounds = 100;  // stop after this many rounds
  int local_steps = 1;         // H: local optimizer steps per round
  double gamma = 1.0;          // consensus step (CHOCO); 1 is plain D-PSGD
  Nanos round_timeout = std::chrono::seconds(60);
  // A round clock: round r starts no sooner than r x round_period after the
  // node's round 0 would have (Start() at first_round, less first_round
  // periods); 0: each round starts as the previous one ends. Nodes alone in
  // a time-varying graph then keep to the clock instead of racing ahead.
  Nanos round_period{0};
  // Every node starts from the same x0 (a shared seed), so every public copy
  // x^_j can start at x0 instead of 0 and only training progress is sent.
  bool common_init = false;
  // The first round this node runs (a daemon resuming from a checkpoint after
  // round r starts at r); the node still stops before round `rounds`.
  std::uint64_t first_round = 0;
  // A node that finds a strict majority of its in-neighbours (floor(k/2) + 1
  // of k) further ahead than waiting allows (RoundTopology::InNeighbourLead:
  // one round on an undirected graph) (it was down, or slow past the
  // timeouts) ends its round at once and jumps to the highest round that
  // majority has reached instead of timing out round after round; one
  // neighbour's round number alone moves nothing (with k = 1 it is the
  // majority). Far-future messages are held one per sender. An in-neighbour
  // whose model was missing at SilentNeighbours::kRounds (3) timeouts in a row while it
  // was counted alive is no longer waited for, until a model of it is mixed
  // again, or, while no other in-neighbour is waited for, until a model of
  // it arrives for the round it went silent at or a later one (it lags
  // rather than withholds, and the node would otherwise run on alone)
  // (docs/security.md, "Insiders"). With CHOCO
  // it also keeps each in-neighbour's public copy x^_j, and a node resuming
  // at first_round > 0 resynchronises the copies with its neighbours (see
  // "CHOCO resynchronisation" above).
  bool catch_up = false;
  // Whether a neighbour is worth waiting for (a membership view; empty: all
  // are). A round ends once every live in-neighbour's message is in; call
  // PeersChanged() when the answer changes. With catch_up a neighbour whose
  // message of the previous round came is waited for whatever the view says.
  std::function<bool(NodeId)> peer_alive;
  // How whole models are combined; anything but `mean` REQUIRES a full-model codec.
  MixingOptions mixing;
  // What every received update must pass before it is used (gossip/admission.h):
  // a whole model farther than `plausibility` times ||x_i|| from x_i is
  // refused (0: no bound; the spec field `plausibility`).
  double plausibility = 10;
  // DiLoCo's outer step. REQUIRES: kNone unless order is kAdaptThenCombine.
  OuterOptions outer;
  // Tensors this node keeps to itself (core/local_tensors.h): mixing and the
  // outer step leave them as the node's own training left them.
  LocalTensors local;
};

class DecentralizedSgdNode final : public Node {
 public:
  // `topology`, `learner` and `observer` must outlive the node. `x0` is the
  // initial model (the same on every node for D-PSGD's analysis, though not required).
  // REQUIRES: a codec that is not Codec::full_model_safe() only with a static topology.
  DecentralizedSgdNode(Env& env, RoundTopology& topology, LocalLearner& learner, ParamVector x0,
                       std::unique_ptr<Codec> codec, DecentralizedSgdOptions options,
                       RoundObserver* observer);

  void Start() override;
  void OnMessage(NodeId from, MessagePtr msg) override;
  // The state after the last completed round (gossip/node_state.h): call it
  // between rounds (from RoundObserver::OnRoundDone, or once finished).
  // FailedPrecondition when the codec's state cannot be exported.
  Result<NodeState> ExportState() const override;
  // Restores an exported state. REQUIRES: before Start(), with
  // options.first_round the rounds the state had completed.
  Status ImportState(const NodeState& state) override;
  // The membership view changed: the round may now be complete.
  void PeersChanged() override { MaybeCombine(); }

  const ParamVector& params() const override { return *x_; }
  std::uint64_t round() const override { return round_; }
  // x and the outgoing buffer; CHOCO adds x^ and s (and the residual without
  // error feedback in the codec), combine-then-adapt one more.
  std::size_t state_floats() const override;
  std::vector<NodeId> WaitingFor() const override;
  bool finished() const { return round_ >= options_.rounds; }
  bool choco() const { return choco_; }

 private:
  void BeginRound();
  UpdatePtr PrepareOutgoing();
  void Send(UpdatePtr q);
  void ArmTimeout();
  void MaybeCombine();
  void Combine();
  void Mix(const std::vector<Received>& got, const std::vector<float>& weights);
  // CHOCO: adds j's difference to s (weight W_ij) and, with resync(), to x^_j.
  void Absorb(NodeId from, const compression::Update& q, float weight);
  // CHOCO with catch_up: the resynchronisation above.
  bool resync() const { return choco_ && options_.catch_up; }
  // catch_up: an in-neighbour is further ahead than waiting allows, so it will
  // not send this round's message again, and the round's own work is done.
  // Whether this round waits for in-neighbour j's model (alive, not gone
  // past it or resynchronised beyond it, not refused, not silent).
  bool Waited(NodeId j) const;
  // catch_up, at a round's timeout: one more silent round for each waited-for
  // in-neighbour whose model is missing.
  void CountSilent();
  // catch_up: the highest round a strict majority of the in-neighbours
  // (floor(k / 2) + 1 of k) have sent a message of: how far a jump may go,
  // so that one neighbour's round number alone moves nothing.
  std::uint64_t Corroborated() const;
  bool FellBehind() const { return ahead_ > round_ + lead_ && sent_ && trained_ && !mixing_ && !finished(); }
  void SendResync(NodeId to, bool want_reply);
  void OnResync(NodeId from, const GossipMessage& m);
  // OnMessage past the checks of kind and channel.
  void Dispatch(NodeId from, std::shared_ptr<const GossipMessage> m);
  // Late differences and resyncs that came while s was in use (a round's
  // mixing or the outgoing difference in progress) wait for its end, and so
  // does everything after them.
  void Defer(NodeId from, std::shared_ptr<const GossipMessage> m);
  void RunDeferred();
  void OnLate(NodeId from, const GossipMessage& m);
  bool busy() const { return mixing_ || preparing_; }
  void MixFull(const std::vector<Received>& got, std::vector<float> weights);

  Env& env_;
  RoundTopology& topology_;
  LocalLearner& learner_;
  std::unique_ptr<Codec> codec_;
  DecentralizedSgdOptions options_;
  RoundObserver* observer_;
  bool choco_;
  UpdateAdmission admission_;
  // The senders of the models MixFull judged out, and why: reported when the mix is done.
  std::vector<std::pair<NodeId, Refusal>> judged_out_;
  // (round, sender) of the models refused on arrival for rounds not yet
  // mixed: that sender has answered the round (with nothing usable).
  std::set<std::pair<std::uint64_t, NodeId>> refused_;
  // catch_up: the in-neighbours that went silent (gossip/silence.h).
  SilentNeighbours silent_;
  // A silent neighbour's model of a round at or past the one it went silent
  // at: it is lagging, not silent; waited for again if nothing else is.
  void MaybeWaitAgain(NodeId j, std::uint64_t round);

  // x_ is shared with the round's outgoing message in lossless fp32 mode and
  // written only while the node holds it alone (Exclusive).
  std::shared_ptr<ParamVector> x_;
  std::shared_ptr<ParamVector> acc_;   // full mode: the weighted sum of the round; may be last round's x
  ParamVector x_hat_;                  // CHOCO: public copy
  ParamVector s_;                      // CHOCO: sum_j W_ij x^_j
  ParamVector last_sent_;              // CHOCO without error feedback: x at the last send
  std::map<NodeId, ParamVector> hat_;  // CHOCO with catch_up: x^_j of each in-neighbour j
  // CHOCO with catch_up: the rounds a neighbour's last resync covered (its
  // differences of earlier rounds are in hat_, and are dropped if they come).
  std::map<NodeId, std::uint64_t> resynced_below_;
  std::deque<Received> deferred_;
  std::uint64_t sent_below_ = 0;             // CHOCO: x^ holds the differences of the rounds below this
  ParamVector delta_;                        // CTA: the local training step's change
  OuterOptimizer outer_;                     // DiLoCo's outer step (inactive: plain D-PSGD)
  std::vector<std::vector<float>> decoded_;  // robust mixing: received models that are not fp32
  UpdatePtr outgoing_;
  RoundInbox inbox_;
  std::uint64_t round_ = 0;
  std::uint64_t ahead_ = 0;                 // catch_up: the highest Corroborated() round so far
  std::uint64_t lead_ = 1;                  // catch_up: RoundTopology::InNeighbourLead of this node
  std::map<NodeId, std::uint64_t> latest_;  // catch_up: the highest round seen from each
  bool sent_ = false;
  bool trained_ = false;
  bool mixing_ = false;     // between Combine and the end of its offloaded mixing
  bool preparing_ = false;  // while the outgoing message is computed off the event loop
  TimerId timeout_ = 0;
  Nanos epoch_{0};  // when round 0 starts by the round clock (round_period)
  double loss_ = 0;
};

}  // namespace murmur::gossip
