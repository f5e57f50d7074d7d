#include "engine/gossip_builder.h"

#include <algorithm>
#include <bit>
#include <limits>

#include "engine/topology.h"
#include "gossip/collective_schedule.h"
#include "gossip/decentralized_sgd.h"
#include "gossip/gossip_learning.h"
#include "gossip/gradient_tracking.h"
#include "gossip/push_sum.h"
#include "gossip/ring_allreduce.h"
#include "gossip/robust_mixing.h"
#include "topology/link_aware.h"

namespace murmur::engine {

namespace {

// The node's codec, drawing from Rng(seed, self, kCompression).
std::unique_ptr<gossip::Codec> MakeCodec(const proto::JobSpec& spec, const gossip::CodecSpec& codec,
                                         NodeId self, const Layout& layout) {
  return std::make_unique<gossip::Codec>(codec, self, layout,
                                         Rng(spec.seed(), self, RngPurpose::kCompression));
}

}  // namespace

Result<AllReduceGroup> AllReduceGroupOf(const JobPlan& plan, NodeId self,
                                        const std::vector<std::uint32_t>* group_of_given) {
  const proto::JobSpec& spec = plan.spec();
  const NodeId n = static_cast<NodeId>(spec.nodes());
  const std::uint32_t g = spec.groups();
  std::vector<std::uint32_t> group_of;
  if (group_of_given != nullptr) {
    group_of = *group_of_given;
  } else {
    for (NodeId i = 0; i < n; ++i) group_of.push_back(static_cast<std::uint32_t>(std::uint64_t{i} * g / n));
  }
  std::vector<std::vector<NodeId>> members(g);
  for (NodeId i = 0; i < n && i < group_of.size(); ++i) {
    if (group_of[i] >= g) return Status::InvalidArgument("node " + std::to_string(i) + " has no group");
    members[group_of[i]].push_back(i);
  }
  for (const auto& m : members) {
    if (m.size() != n / g)
      return Status::InvalidArgument("spec field 'groups': " + std::to_string(g) + " groups of " +
                                     std::to_string(n / g) + " nodes are needed, one has " +
                                     std::to_string(m.size()));
  }
  proto::JobSpec between = spec;
  between.set_topology(spec.group_topology());
  between.set_weights("default");
  auto made = MakeGraphTopology(between, g);
  if (!made.ok()) return made.status().WithContext("spec field 'group_topology'");
  AllReduceGroup out;
  const std::uint32_t mine = group_of.at(self);
  out.ring = members[mine];
  const auto position =
      static_cast<std::size_t>(std::find(out.ring.begin(), out.ring.end(), self) - out.ring.begin());
  for (const topology::MixingEntry& e : made->schedule->At(0).Row(mine)) {
    if (e.col == mine) {
      out.cross_self = e.weight;
    } else {
      out.cross.emplace_back(members[e.col][position], e.weight);
    }
  }
  return out;
}

std::vector<NodeId> AllReducePeers(const AllReduceGroup& group, NodeId self, gossip::Collective collective) {
  std::vector<NodeId> peers;
  const auto at =
      static_cast<NodeId>(std::find(group.ring.begin(), group.ring.end(), self) - group.ring.begin());
  const gossip::CollectiveSchedule schedule(collective, static_cast<NodeId>(group.ring.size()), at, 1);
  for (std::size_t s = 0; s < schedule.steps(); ++s) {
    const gossip::CollectiveStep step = schedule.At(s);
    if (step.send_to != gossip::CollectiveStep::kNobody) peers.push_back(group.ring[step.send_to]);
    if (step.recv_from != gossip::CollectiveStep::kNobody) peers.push_back(group.ring[step.recv_from]);
  }
  for (const auto& [peer, weight] : group.cross) peers.push_back(peer);
  std::sort(peers.begin(), peers.end());
  peers.erase(std::unique(peers.begin(), peers.end()), peers.end());
  return peers;
}

double AllReduceMessageFraction(const JobPlan& plan) {
  const proto::JobSpec& spec = plan.spec();
  // A low-rank round sends the schedule's messages twice (P, then Q).
  const double parts = plan.gossip().codec.lowrank > 0 ? 2 : 1;
  const auto m = static_cast<NodeId>(spec.nodes() / std::max<std::uint32_t>(1, spec.groups()));
  if (m <= 1 || plan.gossip().collective == gossip::Collective::kRing)
    return 1.0 / std::max<NodeId>(1, m) / parts;
  // Halving-doubling over m = p + r (p the largest power of two <= m): both
  // schedules move 2 (m - 1) models a round in all (docs/algorithms.md), in
  // 2 log2 p messages from each of the p ranked positions plus the 2 r of
  // the folded pairs.
  const NodeId p = std::bit_floor(m);
  const double messages = 2.0 * p * static_cast<double>(std::countr_zero(p)) + 2.0 * (m - p);
  return 2.0 * (m - 1) / messages / parts;
}

namespace {

// What every gossip node of a plan takes alike.
struct Common {
  std::unique_ptr<gossip::Codec> codec;
  LocalTensors local;
  Nanos timeout;
  bool static_topology;
  std::uint64_t rounds;
};

using NodeResult = Result<std::unique_ptr<gossip::Node>>;

NodeResult MakeDpsgd(const JobPlan& plan, ParamVector x0, const GossipHost& host, Common c) {
  const proto::JobSpec& spec = plan.spec();
  gossip::DecentralizedSgdOptions o;
  o.order = plan.algorithm() == Algorithm::kDpsgdCta ? gossip::MixOrder::kCombineThenAdapt
                                                     : gossip::MixOrder::kAdaptThenCombine;
  o.local = c.local;
  o.outer = plan.gossip().outer;  // kNone but for diloco
  o.rounds = c.rounds;
  o.first_round = host.first_round;
  o.local_steps = static_cast<int>(spec.local_steps());
  o.gamma = plan.gossip().gamma;
  o.round_timeout = c.timeout;
  o.round_period = FromSeconds(spec.round_period());
  o.common_init = true;  // every node starts from the seed's x0
  // Catch-up reads "a neighbour two rounds ahead" as "I was down"; on a
  // time-varying (one-peer, directed) graph peers drift apart legitimately.
  o.catch_up = host.catch_up && c.static_topology;
  o.peer_alive = host.peer_alive;
  o.mixing = plan.gossip().mixing;
  o.plausibility = spec.plausibility();
  return std::unique_ptr<gossip::Node>(std::make_unique<gossip::DecentralizedSgdNode>(
      *host.env, *host.topology, *host.learner, std::move(x0), std::move(c.codec), o, host.observer));
}

NodeResult MakeAllReduce(const JobPlan& plan, ParamVector x0, const GossipHost& host, Common c) {
  const proto::JobSpec& spec = plan.spec();
  const GossipPlan& g = plan.gossip();
  gossip::RingAllReduceOptions o;
  o.rounds = c.rounds;
  o.first_round = host.first_round;
  o.local_steps = static_cast<int>(spec.local_steps());
  o.collective = g.collective;
  // The host's automatic timeout covers one exchange of a whole model; an
  // all-reduce's round is its schedule's steps one after the other (the
  // ring's 2 (n - 1)), each at most a model. Counted over every node, it
  // also covers a hierarchical round's mix between groups.
  const auto nodes = static_cast<NodeId>(spec.nodes());
  const auto hops = std::max<std::size_t>(1, gossip::CollectiveSchedule(o.collective, nodes, 0, 1).steps());
  o.round_timeout =
      spec.round_timeout() > 0 ? c.timeout : host.auto_round_timeout * static_cast<std::int64_t>(hops);
  o.catch_up = host.catch_up;
  o.overlap = spec.overlap();
  if (g.codec.lowrank > 0) {
    o.lowrank = g.codec.lowrank;
    o.lowrank_error_feedback = g.codec.error_feedback;
    o.lowrank_seed = spec.seed();
    o.lowrank_layout = x0.layout();
  }
  o.local = c.local;
  o.outer = g.outer;  // kNone but for diloco-allreduce
  if (spec.groups() > 1) {
    MURMUR_ASSIGN_OR_RETURN(AllReduceGroup group, AllReduceGroupOf(plan, host.env->self(), host.group_of));
    o.ring = std::move(group.ring);
    o.cross = std::move(group.cross);
    o.cross_self = group.cross_self;
    return std::unique_ptr<gossip::Node>(std::make_unique<gossip::RingAllReduceNode>(
        *host.env, static_cast<NodeId>(o.ring.size()), *host.learner, std::move(x0), std::move(c.codec), o,
        host.observer));
  }
  if (spec.topology() != "ring" && host.topology != nullptr) {  // the ring the topology chose
    o.ring = topology::RingOrder(host.topology->In(0).SupportGraph());
    if (o.ring.size() != spec.nodes())
      return Status::InvalidArgument("spec field 'topology': '" + spec.topology() +
                                     "' is not one cycle through every node, which " + spec.algorithm() +
                                     " needs");
  }
  return std::unique_ptr<gossip::Node>(std::make_unique<gossip::RingAllReduceNode>(
      *host.env, nodes, *host.learner, std::move(x0), std::move(c.codec), o, host.observer));
}

NodeResult MakePushSum(const JobPlan& plan, ParamVector x0, const GossipHost& host, Common c) {
  gossip::PushSumOptions o;
  o.rounds = c.rounds;
  o.first_round = host.first_round;
  o.local_steps = static_cast<int>(plan.spec().local_steps());
  o.round_timeout = c.timeout;
  o.catch_up = host.catch_up && c.static_topology;
  o.plausibility = plan.spec().plausibility();
  return std::unique_ptr<gossip::Node>(std::make_unique<gossip::PushSumNode>(
      *host.env, *host.topology, *host.learner, std::move(x0), std::move(c.codec), o, host.observer));
}

NodeResult MakeDsgt(const JobPlan& plan, ParamVector x0, const GossipHost& host, Common c) {
  gossip::GradientTrackingOptions o;
  o.rounds = c.rounds;
  o.first_round = host.first_round;
  o.round_timeout = c.timeout;
  o.catch_up = host.catch_up && c.static_topology;
  o.peer_alive = host.peer_alive;
  o.plausibility = plan.spec().plausibility();
  return std::unique_ptr<gossip::Node>(std::make_unique<gossip::GradientTrackingNode>(
      *host.env, *host.topology, *host.learner, std::move(x0), std::move(c.codec), o, host.observer));
}

NodeResult MakeGossipLearning(const JobPlan& plan, ParamVector x0, const GossipHost& host, Common c) {
  const proto::JobSpec& spec = plan.spec();
  gossip::GossipLearningOptions o;
  o.period = FromSeconds(spec.period());
  if (host.bound_by_wakeups) {
    o.horizon = Nanos::max();
    o.max_wakeups = spec.rounds();
  } else {
    o.horizon = FromSeconds(spec.period() * static_cast<double>(spec.rounds()));
  }
  o.local_steps = static_cast<int>(spec.local_steps());
  o.fanout = static_cast<int>(spec.fanout());
  o.age_weighted = spec.age_weighted();
  o.uniform_peers = host.peers != nullptr || spec.topology() == "complete";
  o.defer_merges = host.concurrent_training;
  o.plausibility = spec.plausibility();
  auto node = std::make_unique<gossip::GossipLearningNode>(
      *host.env, o.uniform_peers ? nullptr : host.topology, host.nodes, *host.learner, std::move(x0),
      std::move(c.codec), o, host.observer);
  if (host.peers != nullptr) node->SetPeerSampler(host.peers);
  return std::unique_ptr<gossip::Node>(std::move(node));
}

}  // namespace

Result<std::unique_ptr<gossip::Node>> MakeGossipNode(const JobPlan& plan, ParamVector x0,
                                                     const GossipHost& host) {
  const proto::JobSpec& spec = plan.spec();
  const GossipPlan& g = plan.gossip();
  // A ring all-reduce codes segments, not the model's tensors: its codec sees
  // plain vectors; with PowerSGD inside it, the factors travel as they are.
  const bool lowrank = plan.ring_allreduce() && g.codec.lowrank > 0;
  Common c;
  c.codec = MakeCodec(spec, lowrank ? gossip::CodecSpec::Parse("none").value() : g.codec, host.env->self(),
                      plan.ring_allreduce() ? Layout() : x0.layout());
  c.local = plan.local_buffers() ? LocalTensors(x0.layout(), kBufferTensorPrefix) : LocalTensors();
  c.timeout = spec.round_timeout() > 0 ? FromSeconds(spec.round_timeout()) : host.auto_round_timeout;
  c.static_topology = host.topology != nullptr && host.topology->is_static();
  // An overlapped all-reduce's last round is not the start of a longer run's
  // next one: it ends on the anchor (gossip/ring_allreduce.h), so it stops there.
  c.rounds = host.open_ended && !spec.overlap() ? std::numeric_limits<std::uint64_t>::max() : spec.rounds();
  switch (plan.algorithm()) {
    case Algorithm::kDpsgd:
    case Algorithm::kDpsgdCta:
    case Algorithm::kDiloco: return MakeDpsgd(plan, std::move(x0), host, std::move(c));
    case Algorithm::kAllReduce:
    case Algorithm::kDilocoAllReduce: return MakeAllReduce(plan, std::move(x0), host, std::move(c));
    case Algorithm::kPushSum: return MakePushSum(plan, std::move(x0), host, std::move(c));
    case Algorithm::kDsgt: return MakeDsgt(plan, std::move(x0), host, std::move(c));
    case Algorithm::kGossipLearning: return MakeGossipLearning(plan, std::move(x0), host, std::move(c));
    case Algorithm::kFedAvg:
    case Algorithm::kFedProx:
    case Algorithm::kScaffold:
    case Algorithm::kFedAvgM:
    case Algorithm::kFedAdam:
    case Algorithm::kFedYogi:
    case Algorithm::kFedAdagrad:
    case Algorithm::kFedBuff: break;
  }
  return Status::InvalidArgument("spec field 'algorithm': '" + spec.algorithm() +
                                 "' is not a gossip algorithm");
}

}  // namespace murmur::engine
