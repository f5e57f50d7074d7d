// PlanJob: a JobSpec (proto/job_spec.proto) read once, for the simulator and
// for murmurd alike, into a JobPlan that holds its parsed, checked values.
// It is the one check of a JobSpec: every error is an InvalidArgument that
// names the field ("spec field 'lr' must be a positive number") and its limit.
// What only one host can run is refused on the other with the reason: the
// simulator alone has the vehicles topology, hierarchical (edge) aggregation,
// simulated gossip attackers and robust gossip mixing; a daemon refuses
// PowerSGD (its low-rank state is not checkpointed). What the host adds
// around the spec is its own to check: the simulated world (sim/run/scenario.h)
// and the fleet of a job (node/job/job.h).
//
// The builders (engine/gossip_builder.h, engine/federated_builder.h) take a
// `const JobPlan&` and read its typed values: the algorithm as an enum, the
// gossip codec, the mixing rule, the outer optimizer and the collective, the
// federated rules (robust rule, selection, attack and attackers, upload and
// broadcast compressors) and the learner's options. Only PlanJob makes a
// JobPlan, so a builder cannot be handed a spec nobody checked. Each host
// plans a job once (the simulator per run, each MPI rank included; a daemon
// per submission) and hands the plan on; JobsPlanned counts the plans made.
//
// Thread-safety: PlanJob is a pure function (but for the count); a JobPlan is
// an immutable value, readable from any thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "compression/compressor.h"
#include "core/env.h"
#include "core/status.h"
#include "federated/aggregation.h"
#include "federated/attack.h"
#include "federated/selection.h"
#include "federated/strategy.h"
#include "gossip/codec.h"
#include "gossip/collective_schedule.h"
#include "gossip/outer_optimizer.h"
#include "gossip/robust_mixing.h"
#include "ml/ml_learner.h"
#include "proto/job_spec.pb.h"

namespace murmur::engine {

enum class Host { kSimulator, kDaemon };

// The largest `nodes` each kind of spec takes.
inline constexpr std::uint32_t kMaxGossipNodes = 10'000'000;
inline constexpr std::uint32_t kMaxFederatedClients = 1'000'000;

// Every algorithm a spec may name, in the order of engine/algorithms.cc's
// lists (the gossip ones, then the federated ones), whose names they are.
enum class Algorithm {
  kDpsgd,            // adapt-then-combine D-PSGD (CHOCO-SGD with a compressing codec)
  kDpsgdCta,         // combine-then-adapt D-PSGD
  kDiloco,           // D-PSGD with DiLoCo's outer optimizer
  kAllReduce,        // exact averaging by a ring all-reduce
  kDilocoAllReduce,  // the all-reduce with DiLoCo's outer step
  kPushSum,
  kDsgt,  // gradient tracking
  kGossipLearning,
  kFedAvg,  // and the server optimizers below, FedOpt (Reddi et al. 2021)
  kFedProx,
  kScaffold,
  kFedAvgM,
  kFedAdam,
  kFedYogi,
  kFedAdagrad,
  kFedBuff,
};

// The simulator's Byzantine gossip nodes (spec `attack` with attack_fraction
// > 0; sim/adversary/gossip_attack.h says what each crafts) and where they
// are (`attack_placement`: chosen among the nodes, or attached to them).
enum class GossipAttack { kNone, kSignFlip, kAlie, kIpm, kDissensus };
enum class AttackPlacement { kMembers, kAttached };

// What a gossip spec says, parsed.
struct GossipPlan {
  // `compression` with "default" resolved: topk:0.01 (CHOCO-SGD with error
  // feedback) for dpsgd and dpsgd-cta, none for diloco (it communicates H
  // times less already) and for push-sum, dsgt and gossip learning, which
  // send whole vectors.
  std::string compression;
  gossip::CodecSpec codec;  // `compression` parsed
  // CHOCO's consensus step: `gamma`, or for 0 1 with a value coding and 0.05 otherwise.
  double gamma = 1;
  gossip::MixingOptions mixing;  // gossip_aggregation, clip_suspects, clip_honest_majority
  gossip::OuterOptions outer;    // diloco and diloco-allreduce (kind kNone otherwise)
  gossip::Collective collective = gossip::Collective::kRing;  // the all-reduces
  // Whether the topology gives each round its own graph (engine/topology.h).
  bool time_varying = false;
  GossipAttack attack = GossipAttack::kNone;  // `attack`
  AttackPlacement placement = AttackPlacement::kMembers;
};

// What a federated spec says, parsed.
struct FederatedPlan {
  // spec.nodes, but for edge_assignment nearest-rsu, whose last
  // edge_aggregators nodes are the roadside units that aggregate (simulator).
  NodeId clients = 0;
  std::size_t clients_per_round = 0;  // clients_per_round, or every client for 0
  federated::ServerOptimizerKind optimizer = federated::ServerOptimizerKind::kFedAvg;
  federated::RobustOptions robust;  // `robust`; krum_f as the spec gives it (0: from the attackers)
  federated::SelectionKind selection = federated::SelectionKind::kUniform;
  federated::AttackKind attack = federated::AttackKind::kNone;
  // Which clients attack (by index): those `attackers` names, or the first
  // llround(attack_fraction n) of the clients shuffled by Rng(seed, n,
  // kAttack); empty when none attack.
  std::vector<bool> attackers;
  std::shared_ptr<const compression::Compressor> upload;     // null for none
  std::shared_ptr<const compression::Compressor> broadcast;  // null for none
  bool dp_client_side = false;                               // dp_side client
  // edge_assignment with edge_aggregators > 0 (the simulator): clients by id
  // blocks, or each vehicle to its nearest roadside unit.
  enum class EdgeAssignment { kId, kNearestRsu } edge_assignment = EdgeAssignment::kId;
};

class JobPlan {
 public:
  const proto::JobSpec& spec() const { return spec_; }
  Host host() const { return host_; }
  Algorithm algorithm() const { return algorithm_; }
  bool federated() const { return algorithm_ >= Algorithm::kFedAvg; }
  // dpsgd, dpsgd-cta and diloco: the family that sends CHOCO differences
  // with a compressing codec, mixes with a robust rule and has a round clock.
  bool dpsgd_family() const;
  // allreduce and diloco-allreduce.
  bool ring_allreduce() const;
  // topology vehicles: the simulator's contact graphs of moving vehicles.
  bool vehicles() const { return vehicles_; }
  // model_buffers local: each node keeps its own normalisation statistics.
  bool local_buffers() const { return local_buffers_; }
  // The local optimizer of every node (ml::MlLearner), its schedule included.
  const ml::MlLearnerOptions& learner() const { return learner_; }
  // What one model message is coded as: a gossip plan's codec; a federated
  // plan's dense fp32 ("none", the simulator's contact-aware estimate).
  const gossip::CodecSpec& message_codec() const { return federated() ? dense_ : gossip_.codec; }
  // REQUIRES: !federated().
  const GossipPlan& gossip() const;
  // REQUIRES: federated().
  const FederatedPlan& fed() const;

 private:
  friend Result<JobPlan> PlanJob(const proto::JobSpec& spec, Host host);
  JobPlan() = default;

  proto::JobSpec spec_;
  Host host_ = Host::kSimulator;
  Algorithm algorithm_ = Algorithm::kDpsgd;
  bool local_buffers_ = false;
  bool vehicles_ = false;
  ml::MlLearnerOptions learner_;
  GossipPlan gossip_;
  FederatedPlan fed_;
  gossip::CodecSpec dense_;  // federated: "none"
};

// The spec read and checked for `host`: its plan, or InvalidArgument naming
// the field and its limit.
Result<JobPlan> PlanJob(const proto::JobSpec& spec, Host host);

// How many plans PlanJob has made in this process (each host plans a job
// once: the tests count).
std::uint64_t JobsPlanned();

// The spec's gossip compressor with "default" resolved (GossipPlan::compression),
// for a spec that is not planned (a stored job's, to compare graphs).
std::string CompressionOf(const proto::JobSpec& spec);

// Whether a job's state holds what its neighbours sent, so that it is valid
// only on the graph it was taken on: CHOCO's public copies (a gossip
// compressor whose output is not a usable model, or ",choco"). Every other
// state (models, momentum, outer optimizers, push-sum weights, DSGT's
// trackers, all-reduce anchors and PowerSGD factors, a federated round)
// carries over to another graph. Reads a stored job's spec, planned or not.
bool StateFollowsGraph(const proto::JobSpec& spec);

}  // namespace murmur::engine
