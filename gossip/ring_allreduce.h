// RingAllReduceNode: local SGD whose nodes average their models exactly each
// round with a bandwidth-optimal ring all-reduce (Patarasuk and Yuan 2009;
// the schedule of Horovod and NCCL's ring), optionally followed by DiLoCo's
// outer step (gossip/outer_optimizer.h): with it, this is DiLoCo as its
// authors ran it, an all-reduce among a fixed group.
//
// The ring is the n nodes in id order, or in the order `ring` gives (a
// link-aware ring, topology/link_aware.h); below, i is the node's position in
// it. A round, after the H local steps, all-reduces the node's model by the
// schedule of `collective` (gossip/collective_schedule.h): the ring's
// reduce-scatter and all-gather in 2 (n - 1) steps (the default), or
// recursive halving and doubling in about 2 log2 n. Every node then holds
// the same sum, bit for bit, and x = sum / n.
//
// Messages: channel kRingSegment, the round, the step (0 .. steps - 1 of the
// schedule) plus 2^24 x the ring's fingerprint (below) as the scalar, the
// step's range under the codec (a value coding: none, fp16, bf16 or int8;
// each hop codes its partial sum). A message is taken only from the position
// the schedule names for its step, with the step's length. A message for a
// later step waits, as does one for the next two rounds (at most three
// models' worth); one for a finished round, or further ahead, is dropped.
//
// Low-rank (`lowrank`, PowerSGD inside the all-reduce,
// gossip/lowrank_reduce.h): a round all-reduces the node's progress
// d = x_start - x as two vectors one after the other, the P factors (with
// the tensors sent whole) and then the Q factors, the second's steps
// numbered after the first's (steps S1 + s), and every node sets
// x = x_start - agreed progress (then DiLoCo's outer step, if any). With
// overlap (below) round p all-reduces the phase's progress d_p = theta - y_p
// the same way, and the mean that moves the anchor is theta - the agreed
// progress (a round that fails: theta - d_p). Anchors that differ are then
// not pulled together, as no whole model is averaged: each keeps its own
// anchor plus the agreed steps. With groups (below) each vector is mixed
// between the groups after its own reduce-scatter (the first's messages
// carry S1 + S2 as the scalar, the second's S1 + S2 + 1), and `cross` must
// give every group the same mean (complete, weights 1/G), so that all
// groups share P^ and Q; the sums are then means already and not divided
// by n. The codec must be "none".
//
// Overlap (`overlap`, the one-step-delayed outer update of streaming DiLoCo,
// Douillard et al. 2025, with a delay of one whole inner phase): the ring
// averages each phase's result while the next phase trains. Every node
// keeps an anchor theta (x0 at first). Phase p trains H steps from x; its
// progress is d_p = x_before - x_after, and round p all-reduces
// y_p = theta - d_p (the anchor moved by the phase's own progress) while
// phase p + 1 trains on from x_after. When phase p + 1 is done and round p's
// mean ybar_p is in, the anchor takes the outer step with the pseudo-gradient
// theta - ybar_p (theta <- theta - lr step(theta - ybar_p); without an outer
// optimizer theta = ybar_p), x is rebased onto it with phase p + 1's own
// progress, x = theta - d_{p+1}, and round p + 1's all-reduce (of that x)
// and phase p + 2 begin. While the anchors agree, theta - ybar_p is the mean
// progress; anchors that differ (a round one node timed out of, a node
// resumed from an older checkpoint) are pulled together by every averaged
// round, to one anchor at once without an outer optimizer. Round p's outer
// step thus lands one phase late: phase p + 1's gradients are taken at
// points that do not include it (staleness of one round, H inner steps).
// After the last round x = theta. A round whose all-reduce times out uses
// the node's own y_p in place of the mean (its own progress). State for a
// checkpoint, taken at a rebase (the observer's OnRoundDone): x (= y of the
// next round) and "theta"; a node resumed after round r - 1 all-reduces x in
// round r while phase r + 1 trains. With catch_up, a node whose predecessor
// is two rounds ahead gives up its round and averages its phase in the
// predecessor's.
//
// Hierarchical schedule (`cross` not empty): the ring is one group of m
// nodes, and groups mix with each other between the two halves. After the
// reduce-scatter, position i holds its group's sum of one range (the ring:
// segment (i + 1) mod m; halving-doubling: its rank's segment, none for a
// position that folded); it divides it by m (its group's mean) and sends it
// to its counterparts, the nodes at the same position of the neighbouring
// groups (channel kRingSegment, the schedule's step count, 2 (m - 1) for the
// ring, as the scalar), waits for theirs, and
// keeps cross_self x its own + sum over the counterparts of their weight x
// theirs (in the order of `cross`). The all-gather then spreads the mixed
// segments, so every member ends with x_g = sum_h W_gh mean(group h) for the
// groups' mixing matrix W, one D-PSGD step between groups at the cost of
// 1 / m of a model to each neighbouring group. Every group must have m
// members and give its members the same order of counterparts. With all
// groups complete and W = 11^T / G this is the exact mean of every node
// (hierarchical all-reduce); with m = 1 it is D-PSGD over the groups' graph.
//
// Re-formed rings (`peer_alive`, a daemon's membership view): each round's
// ring is the members the view holds alive, in the ring's order, so a member
// that membership declares dead is left out and the others average among
// themselves; it is back in once the view holds it alive. A ring that is not
// the whole one carries a 28-bit fingerprint of its members (never 0) in its
// messages' scalar, and a node takes a segment only when the sender's ring
// is its own for that round: while views disagree, rounds time out and are
// retried (below), never summed over two different rings.
//
// A member that stops (crash, partition) stalls the ring: each node gives the
// round's all-reduce `round_timeout` from its start; past it the node keeps
// its own model of the round (its local steps, no averaging), counts the
// round as failed, and begins the next. No node hangs, and rounds resume
// averaging once every member is back (a member that restarts from its
// checkpoint rejoins at the round its neighbours are in when it is
// `catch_up`). With `catch_up`, a node also gives up a round at once, rather
// than at its timeout, when the sender of the message it waits for has sent
// a message of a later round: links deliver in order (TCP), so that sender
// has left the round and its message will not come. Without this, the nodes
// after a restarted member and the ones before it could stay a round apart
// for good, each half timing out of the round the other has left at the
// same moment, every round.
//
// Thread-safety: one node per Env executor.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "core/env.h"
#include "core/learner.h"
#include "core/local_tensors.h"
#include "core/param_vector.h"
#include "core/round_observer.h"
#include "gossip/codec.h"
#include "gossip/collective_schedule.h"
#include "gossip/lowrank_reduce.h"
#include "gossip/messages.h"
#include "gossip/node.h"
#include "gossip/outer_optimizer.h"

namespace murmur::gossip {

// Largest ring that re-forms around dead members (each message for a round
// to come is checked against the live ring, O(n) to form).
inline constexpr std::size_t kMaxReformedRing = 2048;

struct RingAllReduceOptions {
  std::uint64_t rounds = 100;
  int local_steps = 1;  // H
  Nanos round_timeout = std::chrono::seconds(60);
  Collective collective = Collective::kRing;  // the all-reduce's schedule
  std::uint64_t first_round = 0;              // a daemon resuming from a checkpoint after round r starts at r
  // A node that finds its predecessor two or more rounds ahead (it was down)
  // gives up its round and jumps to the predecessor's; one whose awaited
  // sender has sent a later round's message gives its round up at once.
  bool catch_up = false;
  OuterOptions outer;  // kNone: plain averaging
  // The ring's order, every node once (empty: 0, 1, .., n - 1). Every node
  // of the job must be given the same.
  std::vector<NodeId> ring;
  // Hierarchical: `ring` is this node's group, and these are its
  // counterparts in the neighbouring groups with their mixing weights W_gh;
  // cross_self is W_gg. Empty: one ring, no mix between groups.
  std::vector<std::pair<NodeId, double>> cross;
  double cross_self = 1;
  // A daemon's membership view: each round's ring is the members it says
  // are alive, in the ring's order (empty: every member, always). One ring of
  // at most kMaxReformedRing nodes, without groups.
  std::function<bool(NodeId)> peer_alive;
  // Overlap each round's all-reduce with the next round's inner steps (the
  // one-step-delayed outer update, above). One ring only.
  bool overlap = false;
  // PowerSGD inside the all-reduce: its rank (0: the model itself is
  // all-reduced), error feedback, the seed of the shared first Q, and the
  // model's layout (its tensors' shapes). One ring, with or without overlap.
  std::uint32_t lowrank = 0;
  bool lowrank_error_feedback = true;
  std::uint64_t lowrank_seed = 0;
  Layout lowrank_layout;
  // Tensors this node keeps to itself (core/local_tensors.h): averaging and
  // the outer step leave them as the node's own training left them.
  LocalTensors local;
};

class RingAllReduceNode final : public Node {
 public:
  // `nodes` is the ring's size n (every node of the job). REQUIRES: a
  // full-model codec (Codec::full_model_safe()) built with an empty Layout
  // (it codes segments, which are not the model's tensors).
  RingAllReduceNode(Env& env, NodeId nodes, LocalLearner& learner, ParamVector x0,
                    std::unique_ptr<Codec> codec, RingAllReduceOptions options, RoundObserver* observer);

  void Start() override;
  void OnMessage(NodeId from, MessagePtr msg) override;
  Result<NodeState> ExportState() const override;
  Status ImportState(const NodeState& state) override;

  const ParamVector& params() const override { return x_; }
  std::uint64_t round() const override { return round_; }
  std::size_t state_floats() const override {
    // x, sum; overlap: theta, start, mean; low-rank: start, the two vectors and its own state.
    const std::size_t extra = options_.overlap ? 3 : lowrank_ ? 1 : 0;
    return (2 + extra + outer_.state_vectors()) * x_.size() +
           (lowrank_ ? first_.size() + second_.size() + lowrank_->state_floats() : 0);
  }
  bool finished() const { return round_ >= options_.rounds; }
  // Rounds whose all-reduce timed out (the node kept its own model).
  std::uint64_t failed_rounds() const { return failed_; }
  // Messages held for a later step or round.
  std::size_t held_messages() const { return early_.size(); }

 private:
  void BeginRound();
  void SendStep(const CollectiveStep& step, std::span<const float> vector);
  // The vector the all-reduce's current part reduces, its schedule and its
  // first step (low-rank rounds have two parts; other rounds one, sum_).
  std::span<float> PartVector();
  const CollectiveSchedule& PartSchedule() const { return part_ == 0 ? ring_.schedule : ring_.second; }
  std::uint64_t PartBase() const { return part_ == 0 ? 0 : ring_.schedule.steps(); }
  // Low-rank: the first part is in; the second begins.
  void BeginSecondPart();
  void TryAdvance();
  bool Gone(NodeId from) const;
  void FinishRound(bool averaged);
  void StartReduce();  // the all-reduce of sum_ for round_
  // Overlap: training phases, the anchor's outer step and the rebase onto it.
  void BeginPhase();
  void TryRebase();
  void StepAnchor();
  void FinishOverlapRound(bool averaged);
  // Overlap: round p's vector from x_ = theta - d_p: y_p itself, or with
  // low rank the progress d_p and all-reduce 1's vector from it.
  void SetOverlapVector();
  // Hierarchical: after the reduce-scatter, sends the group's mean of the
  // segment this node owns to its counterparts; true once theirs are mixed in.
  bool CrossMixed();
  Env& env_;
  LocalLearner& learner_;
  std::unique_ptr<Codec> codec_;
  RingAllReduceOptions options_;
  RoundObserver* observer_;
  ParamVector x_;
  ParamVector sum_;  // the round's running sum
  OuterOptimizer outer_;
  // A round's ring: its live members in order, this node's place in it, its
  // schedule and its fingerprint (0: every member).
  struct Ring {
    std::vector<NodeId> members;
    NodeId n = 0, position = 0;
    CollectiveSchedule schedule;
    CollectiveSchedule second;  // low-rank rounds: the Q factors' all-reduce
    std::uint64_t fingerprint = 0;
  };
  // The members `peer_alive` holds alive now (all of them without reform_).
  Ring LiveRing() const;

  std::vector<NodeId> members_;  // the whole ring, in order
  // Whether rounds re-form their ring from `peer_alive` (one ring of at most
  // kMaxReformedRing, no groups); otherwise ring_ is the whole
  // ring throughout.
  bool reform_ = false;
  Ring ring_;  // this round's
  // Messages from the predecessor that came early, by (round, step), with
  // the fingerprint of the ring they were sent in.
  struct Held {
    std::uint64_t fingerprint;
    std::shared_ptr<const GossipMessage> message;
  };
  std::map<std::pair<std::uint64_t, std::uint64_t>, Held> early_;
  // Hierarchical: counterparts' segments by (round, index in `cross`).
  std::map<std::pair<std::uint64_t, std::size_t>, std::shared_ptr<const GossipMessage>> cross_early_;
  // Hierarchical: where this round's owned segment is in its mix between groups.
  enum class CrossMix { kPending, kSent, kMixed };
  CrossMix cross_ = CrossMix::kPending;
  // Overlap: the anchor theta, the phase's start, the round's mean (or, until
  // it is in, the node's own vector; ready or not), and the phase being trained.
  ParamVector theta_, start_, mean_;
  bool mean_ready_ = false;
  bool phase_done_ = false;
  std::uint64_t phase_ = 0;
  std::uint64_t round_ = 0;
  std::unique_ptr<LowRankReduce> lowrank_;
  std::vector<float> first_, second_;  // low-rank: the two vectors a round all-reduces
  int part_ = 0;                       // which of them is being reduced
  std::uint64_t step_ = 0;             // the step under way (numbered across the parts)
  bool step_sent_ = false;             // and whether its message went out
  std::uint64_t ahead_ = 0;            // catch_up: the highest round seen from the predecessor
  // catch_up: the highest round each sender (a member of the ring) was seen in.
  std::map<NodeId, std::uint64_t> latest_;
  bool reducing_ = false;  // between the end of training and the end of the round's all-reduce
  std::uint64_t failed_ = 0;
  TimerId timeout_ = 0;
  double loss_ = 0;
};

}  // namespace murmur::gossip
