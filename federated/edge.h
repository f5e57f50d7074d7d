// EdgeAggregator: the middle tier of hierarchical federated learning (a
// roadside unit for vehicles, a gateway for IoT devices), transport-agnostic
// (acts only through core::Env).
//
// The top aggregator is an ordinary FedServer whose clients are the edge
// aggregators (addressed through core/remapped_env.h). On a task for round r
// from its parent, an edge runs one round over its own cluster of clients as
// a flat server would: it selects ceil(over_commit k) of its members, forwards
// the task (the same model updates, shared; its own work budget), keeps the
// first k results, and closes at k results, when every selected member still
// online has answered, or at its deadline (a straggler is not selected again
// until its late result is in, as in FedServer). It then sends its parent ONE
// result: the cluster's aggregate with weight W_e = sum_{i in e} n_i.
//
// With the `mean` rule the edge streams results into one double accumulator
// and sends Delta_e = sum_i n_i Delta_i / W_e (or, when the task asks for a
// model, x + Delta_e), so the top's sample-weighted mean over edges,
// sum_e W_e Delta_e / sum_e W_e, is exactly the flat sum_i n_i Delta_i / sum_i
// n_i over the same clients (Liu et al., "Client-Edge-Cloud Hierarchical
// Federated Learning", ICC 2020, Sec. III). Robust rules and simulated attacks
// run at the edge over its cluster's updates (that is where the individual
// updates are); the top then takes the weighted mean of the edges. FedNova at
// the edge sends tau_e sum_i p_i Delta_i / tau_i with tau_e = round(sum_i p_i
// tau_i), so the top's FedNova over edges is the flat FedNova with each
// edge's mean tau rounded to whole steps.
//
// An edge whose round ends with no result answers with an empty result
// (kFlagEmpty) so that the top does not wait for it.
//
// Thread-safety: one Env executor.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "core/param_vector.h"
#include "federated/admission.h"
#include "federated/aggregation.h"
#include "federated/attack.h"
#include "federated/messages.h"
#include "federated/selection.h"

namespace murmur::federated {

struct EdgeOptions {
  NodeId parent = kNoNode;            // the top aggregator
  std::vector<NodeId> members;        // the cluster's clients (node ids)
  std::size_t clients_per_round = 1;  // k: results an edge round keeps
  double over_commit = 1.0;           // select ceil(over_commit k) members
  Nanos deadline{0};                  // the edge round closes this long after the task (0: none)
  bool partial_work = false;          // tell members a budget of work_fraction * deadline
  double work_fraction = 0.8;
  bool fednova = false;
  SelectionOptions selection;
  RobustOptions robust;
  AttackKind attack = AttackKind::kNone;
  double attack_scale = 1.0;
  std::vector<bool> attacker;  // by member index (empty: none)
  // What a member's result must satisfy (federated/admission.h): its weight
  // at most max_weight, its difference at most plausibility ||x|| (0: no bound).
  double max_weight = 0;
  double plausibility = 0;
  double length_floor = 0;  // ResultBounds::length_floor (client-side DP)
};

class EdgeAggregator final : public MessageSink {
 public:
  // REQUIRES: options.members non-empty.
  EdgeAggregator(Env& env, const Layout& layout, EdgeOptions options);

  void OnMessage(NodeId from, MessagePtr msg) override;
  // Availability of a member (node id); other ids are ignored.
  void SetOnline(NodeId client, bool online);
  // Restricts the members a round may select to those with in_cluster[i] != 0
  // (vehicles: the ones nearest to this RSU now) and keeps k results per round
  // (0: the edge answers every task with an empty result). Takes effect at
  // the next task. REQUIRES: in_cluster.size() == members.size().
  void SetCluster(std::vector<std::uint8_t> in_cluster, std::size_t k);

  std::uint64_t rounds_done() const { return rounds_done_; }
  std::uint64_t results_accepted() const { return accepted_; }
  std::uint64_t results_dropped() const { return dropped_; }
  std::size_t state_floats() const;

 private:
  bool Buffered() const;
  void OnTask(const FedMessage& m);
  void OnResult(std::size_t member, const FedMessage& m);
  void MaybeClose();
  void CloseRound();
  // The simulated attack on the held updates, and the refusal of crafted
  // ones that are implausible (as FedServer::PoisonHeld).
  void PoisonHeld();
  void SendUp(std::size_t results);

  Env& env_;
  EdgeOptions options_;
  ClientSelector selector_;
  Rng attack_rng_;
  std::unordered_map<NodeId, std::size_t> member_index_;
  ParamVector x_, scratch_;  // the task's global model; a decoding buffer
  FedHeader task_;
  bool open_ = false;
  TimerId deadline_timer_ = 0;
  Nanos started_{0};  // when the current task arrived
  std::vector<std::uint8_t> pending_;
  std::vector<std::uint8_t> excluded_;  // members outside the cluster now (empty: none)
  // Stragglers are avoided until their late result is in (as in FedServer).
  std::vector<std::uint64_t> straggling_until_;
  std::vector<std::uint8_t> busy_;
  std::size_t outstanding_ = 0, results_ = 0;
  std::vector<double> acc_, delta_, last_;
  std::vector<double> diff_;  // the result being judged: Delta_i in double
  double weight_sum_ = 0, tau_sum_ = 0, loss_sum_ = 0;
  std::vector<ParamVector> held_;
  std::vector<double> held_weight_, held_tau_, held_loss_;
  std::vector<std::size_t> held_member_;
  std::vector<bool> held_attacker_;
  std::uint64_t rounds_done_ = 0, accepted_ = 0, dropped_ = 0;
};

}  // namespace murmur::federated
