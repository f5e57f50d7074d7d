#include "node/gossip_algorithm.h"

#include <set>

#include "gossip/codec.h"
#include "gossip/decentralized_sgd.h"
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
}  // namespace

bool IsGossipJob(const std::string& a) {
  return a == "dpsgd" || a == "dpsgd-cta" || a == "push-sum" || a == "dsgt";
}

std::string GossipStateTag(const proto::JobConfig& job) { return job.algorithm() + " " + job.compression(); }

Result<JobTopology> MakeJobTopology(const proto::JobConfig& job, NodeId self) {
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
  if (a == "push-sum") {
    gossip::PushSumOptions o;
    o.rounds = job.rounds();
    o.first_round = in.first_round;
    o.local_steps = static_cast<int>(job.local_steps());
    o.round_timeout = timeout;
    return std::unique_ptr<GossipAlgorithm>(new Engine<gossip::PushSumNode>(
        *in.env, *in.topology, *in.learner, std::move(x0), std::move(codec), o, in.observer));
  }
  if (a == "dsgt") {
    gossip::GradientTrackingOptions o;
    o.rounds = job.rounds();
    o.first_round = in.first_round;
    o.round_timeout = timeout;
    return std::unique_ptr<GossipAlgorithm>(new Engine<gossip::GradientTrackingNode>(
        *in.env, *in.topology, *in.learner, std::move(x0), std::move(codec), o, in.observer));
  }
  return Status::InvalidArgument("job field 'algorithm': '" + a + "' is not a gossip algorithm murmurd runs");
}

}  // namespace murmur::node
