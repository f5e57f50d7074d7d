#include "node/job/gossip_algorithm.h"

#include <set>

#include "gossip/codec.h"
#include "gossip/decentralized_sgd.h"
#include "gossip/gossip_learning.h"
#include "gossip/gradient_tracking.h"
#include "gossip/push_sum.h"
#include "topology/factory.h"

namespace murmur::node {

namespace {
Nanos Seconds(double s) { return Nanos(static_cast<std::int64_t>(s * 1e9)); }

// Forwards the GossipAlgorithm calls to one gossip node class.
template <typename NodeT>
class Engine final : public GossipAlgorithm {
 public:
  template <typename... Args>
  explicit Engine(Args&&... args) : node_(std::forward<Args>(args)...) {}
  MessageSink* sink() override { return &node_; }
  void Start() override { node_.Start(); }
  void PeersChanged() override {
    if constexpr (std::is_same_v<NodeT, gossip::DecentralizedSgdNode>) node_.PeersChanged();
  }
  const ParamVector& params() const override { return node_.params(); }
  std::uint64_t round() const override { return node_.round(); }
  Result<gossip::NodeState> ExportState() const override { return node_.ExportState(); }
  Status ImportState(const gossip::NodeState& state) override { return node_.ImportState(state); }

 private:
  NodeT node_;
};

// Gossip learning: the node owns no topology; its peers come from the sampler.
class GossipLearningEngine final : public GossipAlgorithm {
 public:
  GossipLearningEngine(std::unique_ptr<JobPeerSampler> sampler,
                       std::unique_ptr<gossip::GossipLearningNode> node)
      : sampler_(std::move(sampler)), node_(std::move(node)) {
    node_->SetPeerSampler(sampler_.get());
  }
  MessageSink* sink() override { return node_.get(); }
  void Start() override { node_->Start(); }
  const ParamVector& params() const override { return node_->params(); }
  std::uint64_t round() const override { return node_->wakeups(); }
  Result<gossip::NodeState> ExportState() const override { return node_->ExportState(); }
  Status ImportState(const gossip::NodeState& state) override { return node_->ImportState(state); }
  std::vector<std::uint64_t> peer_draws() const override { return sampler_->draws(); }

 private:
  std::unique_ptr<JobPeerSampler> sampler_;
  std::unique_ptr<gossip::GossipLearningNode> node_;
};
}  // namespace

JobPeerSampler::JobPeerSampler(Env& env, NodeId nodes, std::function<bool(NodeId)> peer_alive)
    : self_(env.self()),
      nodes_(nodes),
      peer_alive_(std::move(peer_alive)),
      rng_(env.MakeRng(RngPurpose::kPeerSampling)),
      draws_(std::make_unique<std::atomic<std::uint64_t>[]>(nodes)) {}

std::vector<NodeId> JobPeerSampler::Sample(std::size_t k) {
  std::vector<NodeId> alive;
  for (NodeId j = 0; j < nodes_; ++j) {
    if (j != self_ && (!peer_alive_ || peer_alive_(j))) alive.push_back(j);
  }
  const std::size_t m = std::min(k, alive.size());
  for (std::size_t i = 0; i < m; ++i) {
    std::swap(alive[i], alive[i + rng_.UniformInt(alive.size() - i)]);
    draws_[alive[i]].fetch_add(1, std::memory_order_relaxed);
  }
  alive.resize(m);
  return alive;
}

std::vector<std::uint64_t> JobPeerSampler::draws() const {
  std::vector<std::uint64_t> out(nodes_);
  for (NodeId j = 0; j < nodes_; ++j) out[j] = draws_[j].load(std::memory_order_relaxed);
  return out;
}

bool IsGossipJob(const std::string& a) {
  return a == "dpsgd" || a == "dpsgd-cta" || a == "push-sum" || a == "dsgt" || a == "gossip-learning";
}

std::string GossipStateTag(const proto::JobConfig& job) { return job.algorithm() + " " + job.compression(); }

Result<JobTopology> MakeJobTopology(const proto::JobConfig& job, NodeId self) {
  if (job.algorithm() == "gossip-learning") {  // peers from membership: anyone of the job
    JobTopology t;
    for (NodeId j = 0; j < job.nodes(); ++j) {
      if (j != self) t.neighbours.push_back(j);
    }
    return t;
  }
  topology::TopologySpec spec;
  spec.kind = job.topology();
  spec.nodes = job.nodes();
  spec.seed = job.seed();
  if (job.algorithm() == "push-sum") {  // as the simulator: column-stochastic weights
    spec.weights = topology::WeightOptions{topology::WeightRule::kPushSum, false};
    spec.weights_given = true;
  }
  auto schedule = topology::MakeSchedule(spec);
  if (!schedule.ok()) return schedule.status().WithContext("job field 'topology'");
  JobTopology t;
  t.schedule = std::move(schedule).value();
  std::set<NodeId> peers;
  const std::uint64_t period = t.schedule->period();
  if (period == 0) {  // every round drawn afresh: anyone may be a neighbour
    for (NodeId j = 0; j < job.nodes(); ++j) peers.insert(j);
  } else {
    for (std::uint64_t r = 0; r < period; ++r) {
      const topology::MixingMatrix& w = t.schedule->At(r);
      for (NodeId j = 0; j < job.nodes(); ++j) {
        if (w.At(self, j) != 0 || w.At(j, self) != 0) peers.insert(j);
      }
    }
  }
  peers.erase(self);
  t.neighbours.assign(peers.begin(), peers.end());
  if (period == 1) {
    t.rounds = std::make_unique<gossip::RoundTopology>(t.schedule->At(0));
  } else {
    topology::Schedule* sched = t.schedule.get();
    t.rounds = std::make_unique<gossip::RoundTopology>([sched](std::uint64_t r) { return sched->At(r); });
  }
  return t;
}

Result<std::unique_ptr<GossipAlgorithm>> MakeGossipAlgorithm(const proto::JobConfig& job, ParamVector x0,
                                                             GossipAlgorithmInputs in) {
  const std::string& a = job.algorithm();
  auto spec = gossip::CodecSpec::Parse(job.compression());
  if (!spec.ok()) return spec.status().WithContext("job field 'compression'");
  const bool dpsgd = a == "dpsgd" || a == "dpsgd-cta";
  if (!spec->full_model_safe && !dpsgd)
    return Status::InvalidArgument("job field 'compression': " + a +
                                   " sends whole vectors; use none, fp16, bf16 or int8 (got '" +
                                   job.compression() + "')");
  if (!spec->full_model_safe && !in.topology->is_static())
    return Status::InvalidArgument("job field 'compression': '" + job.compression() +
                                   "' is sent as CHOCO differences, which need a static topology; use "
                                   "fp16, bf16 or int8 with '" +
                                   job.topology() + "'");
  const NodeId self = in.env->self();
  auto codec = std::make_unique<gossip::Codec>(*spec, self, x0.layout(),
                                               Rng(job.seed(), self, RngPurpose::kCompression));
  const Nanos timeout = Seconds(job.round_timeout());
  if (dpsgd) {
    gossip::DecentralizedSgdOptions o;
    o.order = a == "dpsgd-cta" ? gossip::MixOrder::kCombineThenAdapt : gossip::MixOrder::kAdaptThenCombine;
    o.rounds = job.rounds();
    o.first_round = in.first_round;
    o.local_steps = static_cast<int>(job.local_steps());
    o.gamma = job.gamma() > 0 ? job.gamma() : (spec->full_model_safe ? 1.0 : 0.05);
    o.round_timeout = timeout;
    o.common_init = true;  // every node starts from the job seed's x0
    // Catch-up reads "a neighbour two rounds ahead" as "I was down"; on a
    // time-varying (one-peer, directed) graph peers drift apart legitimately.
    o.catch_up = in.topology->is_static();
    o.peer_alive = std::move(in.peer_alive);
    return std::unique_ptr<GossipAlgorithm>(new Engine<gossip::DecentralizedSgdNode>(
        *in.env, *in.topology, *in.learner, std::move(x0), std::move(codec), o, in.observer));
  }
  if (a == "gossip-learning") {  // as sim/runner.cc, bounded by wake-ups instead of a horizon
    gossip::GossipLearningOptions o;
    o.period = Seconds(job.period());
    o.horizon = Nanos::max();
    o.max_wakeups = job.rounds();
    o.local_steps = static_cast<int>(job.local_steps());
    o.fanout = static_cast<int>(job.fanout());
    o.age_weighted = job.age_weighted();
    o.uniform_peers = true;  // overridden by the sampler
    o.defer_merges = true;   // AsioEnv trains on a worker thread
    auto sampler = std::make_unique<JobPeerSampler>(*in.env, job.nodes(), std::move(in.peer_alive));
    auto node = std::make_unique<gossip::GossipLearningNode>(*in.env, nullptr, job.nodes(), *in.learner,
                                                             std::move(x0), std::move(codec), o, in.observer);
    return std::unique_ptr<GossipAlgorithm>(new GossipLearningEngine(std::move(sampler), std::move(node)));
  }
  if (a == "push-sum") {
    gossip::PushSumOptions o;
    o.rounds = job.rounds();
    o.first_round = in.first_round;
    o.local_steps = static_cast<int>(job.local_steps());
    o.round_timeout = timeout;
    o.catch_up = in.topology->is_static();  // as D-PSGD's, above
    return std::unique_ptr<GossipAlgorithm>(new Engine<gossip::PushSumNode>(
        *in.env, *in.topology, *in.learner, std::move(x0), std::move(codec), o, in.observer));
  }
  if (a == "dsgt") {
    gossip::GradientTrackingOptions o;
    o.rounds = job.rounds();
    o.first_round = in.first_round;
    o.round_timeout = timeout;
    o.catch_up = in.topology->is_static();  // as D-PSGD's, above
    return std::unique_ptr<GossipAlgorithm>(new Engine<gossip::GradientTrackingNode>(
        *in.env, *in.topology, *in.learner, std::move(x0), std::move(codec), o, in.observer));
  }
  return Status::InvalidArgument("job field 'algorithm': '" + a + "' is not a gossip algorithm murmurd runs");
}

}  // namespace murmur::node
