#include "sim/runner.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <map>
#include <sstream>

#include "federated/attack.h"
#include "gossip/decentralized_sgd.h"
#include "gossip/gossip_learning.h"
#include "gossip/gradient_tracking.h"
#include "gossip/push_sum.h"
#include "ml/ml_learner.h"
#include "sim/byzantine.h"
#include "sim/churn.h"
#include "sim/evaluator.h"
#include "sim/faults.h"
#include "sim/federated_run.h"
#include "sim/scenario.h"
#include "sim/simulator.h"
#include "sim/world.h"

namespace murmur::sim {

namespace {

using Clock = std::chrono::steady_clock;

// Synchronous nodes are not told where the run ends. A run of R rounds is
// the first R rounds of a longer one: nodes that finish round R early go on
// into round R + 1, as they would in a longer run, until the last node has
// finished round R and the run stops. Their next round's traffic shares the
// links with the stragglers' last messages; were they to stop at R, the
// stragglers' last round would see less contention, make more deadlines,
// and round R's metrics would depend on whether the run goes on.
constexpr std::uint64_t kNoLastRound = std::numeric_limits<std::uint64_t>::max();

// Uniform access to the nodes of any algorithm.
class NodeRef {
 public:
  virtual ~NodeRef() = default;
  virtual MessageSink* sink() = 0;
  virtual void Start() = 0;
  virtual const ParamVector& params() const = 0;
  virtual std::size_t state_floats() const = 0;
};

template <typename Node>
class NodeAdapter final : public NodeRef {
 public:
  template <typename... Args>
  explicit NodeAdapter(std::size_t state_vectors, Args&&... args)
      : node_(std::forward<Args>(args)...), state_vectors_(state_vectors) {}
  MessageSink* sink() override { return &node_; }
  void Start() override { node_.Start(); }
  const ParamVector& params() const override { return node_.params(); }
  std::size_t state_floats() const override { return state_vectors_ * node_.params().size(); }

 private:
  Node node_;
  std::size_t state_vectors_;
};

class ScenarioRun final : public RoundObserver {
 public:
  ScenarioRun(const proto::Scenario& s, std::unique_ptr<World> world, const ProgressFn& progress)
      : s_(s),
        world_(std::move(world)),
        n_(static_cast<NodeId>(s.nodes() + world_->attached_to.size())),
        progress_(progress),
        start_(Clock::now()) {}

  Status Build();
  RunSummary Run();

  void OnRoundDone(NodeId node, std::uint64_t round, double loss) override;

 private:
  void Evaluate(std::uint64_t round);
  Status BuildByzantine(gossip::MixingOptions* mixing);
  std::unique_ptr<gossip::Codec> MakeCodec(NodeId i) const {
    return std::make_unique<gossip::Codec>(codec_spec_, i, world_->initial.layout(),
                                           Rng(s_.seed(), i, RngPurpose::kCompression));
  }

  const proto::Scenario& s_;
  std::unique_ptr<World> world_;
  NodeId n_;  // simulated nodes: the scenario's, and Byzantine ones attached to them
  ProgressFn progress_;
  Clock::time_point start_;
  double WallSeconds() const { return std::chrono::duration<double>(Clock::now() - start_).count(); }
  gossip::CodecSpec codec_spec_;
  std::unique_ptr<Simulator> sim_;
  // Injected faults: a FaultyEnv around each node's SimEnv and, when messages
  // may be corrupted, a DecodingSink in front of each node. Declared after
  // sim_ (the envs cancel their timers on it) and before the nodes that use them.
  std::unique_ptr<FaultPlan> fault_plan_;
  std::vector<std::unique_ptr<FaultyEnv>> faulty_envs_;
  std::vector<std::unique_ptr<DecodingSink>> decoding_sinks_;
  std::vector<std::unique_ptr<ml::MlLearner>> learners_;
  std::vector<std::unique_ptr<NodeRef>> nodes_;  // null for a Byzantine node
  std::unique_ptr<ByzantineCoalition> coalition_;
  std::vector<std::unique_ptr<TapEnv>> taps_;
  NodeId honest_ = 0;  // nodes that learn (all but the Byzantine ones)
  std::unique_ptr<Evaluator> evaluator_;
  std::unique_ptr<MetricsWriter> writer_;
  std::vector<double> last_loss_;
  std::map<std::uint64_t, NodeId> completed_;  // round -> nodes done with it
  // Evaluation round -> every node's model as it finished that round. Nodes
  // that finish early start (and, in the simulator, compute) their next
  // round's local steps before the last node is done; evaluating their live
  // models would mix end-of-round and mid-round states.
  struct Snapshot {
    std::vector<ParamVector> params;
    std::vector<double> loss;
  };
  std::map<std::uint64_t, Snapshot> snapshots_;
  std::uint64_t rounds_done_ = 0;
  RunSummary summary_;
};

// Byzantine-robust gossip (docs/security.md): the mixing rule, and the
// Byzantine nodes with their attack.
Status ScenarioRun::BuildByzantine(gossip::MixingOptions* mixing) {
  const NodeId n = n_;
  honest_ = n;
  auto rule = gossip::ParseMixingRule(s_.gossip_aggregation(), s_.clip_suspects());
  if (!rule.ok()) return rule.status().WithContext("scenario field 'gossip_aggregation'");
  *mixing = rule.value();
  mixing->honest_majority = s_.clip_honest_majority();
  if (mixing->rule != gossip::MixingRule::kMean && !codec_spec_.full_model_safe) {
    return Status::InvalidArgument("scenario field 'gossip_aggregation': '" + s_.gossip_aggregation() +
                                   "' mixes whole models; use compression none, fp16, bf16 or int8 (got '" +
                                   s_.compression() + "')");
  }
  AttackParams params;
  auto attack = ParseGossipAttack(s_.attack());
  if (!attack.ok()) return attack.status().WithContext("scenario field 'attack'");
  params.kind = attack.value();
  // Placement (sim/byzantine_placement.h): extra nodes after the scenario's, or members chosen by the seed.
  std::vector<bool> byzantine(n, false);
  if (!world_->attached_to.empty()) {
    for (NodeId i = s_.nodes(); i < n; ++i) byzantine[i] = true;
  } else {
    byzantine = ChooseByzantine(n, s_.attack_fraction(), s_.seed());
  }
  std::size_t f = 0;
  for (bool b : byzantine) f += b;
  if (params.kind == GossipAttack::kNone || f == 0) return Status::Ok();
  if (f >= n)
    return Status::InvalidArgument("scenario field 'attack_fraction': no honest node would be left");
  if (!codec_spec_.full_model_safe || !world_->topology->is_static()) {
    return Status::InvalidArgument(
        "scenario field 'attack': gossip attackers need whole models (compression "
        "none, fp16, bf16 or int8) on a static topology (got '" +
        s_.compression() + "' on '" + s_.topology() + "')");
  }
  params.scale = s_.attack_scale();
  params.alie_z = federated::AlieZ(n, f);
  coalition_ =
      std::make_unique<ByzantineCoalition>(*sim_, world_->topology->In(0), std::move(byzantine), params);
  honest_ = static_cast<NodeId>(n - f);
  return Status::Ok();
}

Status ScenarioRun::Build() {
  const NodeId n = n_;
  auto codec = gossip::CodecSpec::Parse(s_.compression());
  if (!codec.ok()) return codec.status().WithContext("scenario field 'compression'");
  codec_spec_ = std::move(codec).value();
  const bool needs_full = s_.algorithm() != "dpsgd" && s_.algorithm() != "dpsgd-cta";
  if (needs_full && !codec_spec_.full_model_safe) {
    return Status::InvalidArgument("scenario field 'compression': " + s_.algorithm() +
                                   " sends whole vectors; use none, fp16, bf16 or int8 (got '" +
                                   s_.compression() + "')");
  }
  if (!codec_spec_.full_model_safe && !world_->topology->is_static()) {
    return Status::InvalidArgument(
        "scenario field 'compression': '" + s_.compression() +
        "' is sent as CHOCO differences, which need a static topology; use fp16, bf16 or "
        "int8 with '" +
        s_.topology() + "'");
  }
  SimulatorOptions so;
  so.seed = s_.seed();
  so.threads = s_.threads() == 0 ? HardwareThreads() : static_cast<int>(s_.threads());
  so.network.loss = s_.loss();
  so.network.extra_latency = FromSeconds(s_.latency_ms() / 1000);
  so.network.jitter = s_.jitter();
  sim_ = std::make_unique<Simulator>(so, world_->devices);
  gossip::MixingOptions mixing;
  MURMUR_RETURN_IF_ERROR(BuildByzantine(&mixing));
  if (HasScenarioFaults(s_)) {
    MURMUR_ASSIGN_OR_RETURN(fault_plan_, MakeScenarioFaultPlan(s_));
    for (NodeId i = 0; i < n; ++i)
      faulty_envs_.push_back(std::make_unique<FaultyEnv>(&sim_->env(i), fault_plan_.get()));
  }

  ml::MlLearnerOptions lo;
  lo.batch = static_cast<int>(s_.batch());
  lo.lr = s_.lr();
  lo.momentum = s_.momentum();
  lo.weight_decay = s_.weight_decay();
  MURMUR_ASSIGN_OR_RETURN(lo.schedule, ScenarioSchedule(s_));
  last_loss_.assign(n, 0.0);
  for (NodeId i = 0; i < s_.nodes(); ++i) {  // attached Byzantine nodes do not learn
    learners_.push_back(std::make_unique<ml::MlLearner>(*world_->model, world_->data.train,
                                                        world_->partition->node(i), lo,
                                                        Rng(s_.seed(), i, RngPurpose::kBatch)));
  }
  const double gamma = s_.gamma() > 0 ? s_.gamma() : (codec_spec_.full_model_safe ? 1.0 : 0.05);
  const Nanos timeout = FromSeconds(s_.round_timeout());
  gossip::RoundTopology& topo = *world_->topology;
  for (NodeId i = 0; i < n; ++i) {
    if (coalition_ != nullptr && coalition_->byzantine(i)) {
      MessageSink* sink = coalition_.get();
      if (s_.fault_corrupt() > 0) {  // so that every corrupted message meets a decoder and is counted
        decoding_sinks_.push_back(std::make_unique<DecodingSink>(sink, GossipWireDecoder()));
        sink = decoding_sinks_.back().get();
      }
      sim_->SetSink(i, sink);
      nodes_.push_back(nullptr);
      continue;
    }
    // SimEnv, then injected faults, then the coalition's tap (it sees what the node meant to send).
    Env* env_ptr = fault_plan_ ? static_cast<Env*>(faulty_envs_[i].get()) : &sim_->env(i);
    if (coalition_ != nullptr) {
      taps_.push_back(std::make_unique<TapEnv>(*env_ptr, *coalition_));
      env_ptr = taps_.back().get();
    }
    Env& env = *env_ptr;
    ParamVector x0 = world_->initial.Clone();
    ml::MlLearner& learner = *learners_[i];
    const std::string& a = s_.algorithm();
    if (a == "dpsgd" || a == "dpsgd-cta") {
      gossip::DecentralizedSgdOptions o;
      o.order = a == "dpsgd" ? gossip::MixOrder::kAdaptThenCombine : gossip::MixOrder::kCombineThenAdapt;
      o.rounds = kNoLastRound;
      o.local_steps = static_cast<int>(s_.local_steps());
      o.gamma = gamma;
      o.round_timeout = timeout;
      o.common_init = true;
      o.mixing = mixing;
      std::size_t vectors = codec_spec_.full_model_safe ? 2 : 3 + !codec_spec_.error_feedback;
      nodes_.push_back(std::make_unique<NodeAdapter<gossip::DecentralizedSgdNode>>(
          vectors + (a == "dpsgd-cta"), env, topo, learner, std::move(x0), MakeCodec(i), o, this));
    } else if (a == "push-sum") {
      gossip::PushSumOptions o;
      o.rounds = kNoLastRound;
      o.local_steps = static_cast<int>(s_.local_steps());
      o.round_timeout = timeout;
      nodes_.push_back(std::make_unique<NodeAdapter<gossip::PushSumNode>>(
          3 + 2 * topo.Out(0).Row(i).size(), env, topo, learner, std::move(x0), MakeCodec(i), o, this));
    } else if (a == "dsgt") {
      gossip::GradientTrackingOptions o;
      o.rounds = kNoLastRound;
      o.round_timeout = timeout;
      nodes_.push_back(std::make_unique<NodeAdapter<gossip::GradientTrackingNode>>(
          7, env, topo, learner, std::move(x0), MakeCodec(i), o, this));
    } else {
      gossip::GossipLearningOptions o;
      o.period = FromSeconds(s_.period());
      o.horizon = FromSeconds(s_.period() * static_cast<double>(s_.rounds()));
      o.local_steps = static_cast<int>(s_.local_steps());
      o.fanout = static_cast<int>(s_.fanout());
      o.age_weighted = s_.age_weighted();
      o.uniform_peers = s_.topology() == "complete";
      nodes_.push_back(std::make_unique<NodeAdapter<gossip::GossipLearningNode>>(
          1, env, o.uniform_peers ? nullptr : &topo, n, learner, std::move(x0), MakeCodec(i), o, this));
    }
    MessageSink* sink = nodes_.back()->sink();
    if (s_.fault_corrupt() > 0) {
      decoding_sinks_.push_back(std::make_unique<DecodingSink>(sink, GossipWireDecoder()));
      sink = decoding_sinks_.back().get();
    }
    sim_->SetSink(i, sink);
    summary_.state_bytes += nodes_.back()->state_floats() * sizeof(float);
  }
  evaluator_ = std::make_unique<Evaluator>(*world_->model, world_->data.test, s_.eval_nodes(),
                                           s_.eval_samples(), s_.seed(), sim_->pool());
  auto writer = MetricsWriter::Open(s_.metrics_csv(), s_.metrics_json());
  if (!writer.ok()) return writer.status();
  writer_ = std::move(writer).value();
  std::ostringstream d;
  d << n << " nodes, " << world_->topology_description << ", " << s_.algorithm() << ", " << s_.model() << " ("
    << world_->initial.size() << " parameters), " << s_.dataset() << " " << s_.partition() << ", compression "
    << s_.compression();
  if (s_.gossip_aggregation() != "mean") d << ", gossip aggregation " << s_.gossip_aggregation();
  if (honest_ < n) {
    d << ", " << n - honest_ << " Byzantine nodes (" << s_.attack();
    if (n - honest_ <= 8) {
      const char* sep = "): ";
      for (NodeId i = 0; i < n; ++i) {
        if (coalition_->byzantine(i)) {
          d << sep << i;
          sep = ", ";
        }
      }
    } else {
      d << ")";
    }
  }
  summary_.description = d.str();
  summary_.params_per_node = world_->initial.size();
  summary_.learning_nodes = honest_;
  return Status::Ok();
}

void ScenarioRun::OnRoundDone(NodeId node, std::uint64_t round, double loss) {
  last_loss_[node] = loss;
  if (s_.algorithm() == "gossip-learning") return;  // evaluated on a clock instead
  const std::uint64_t done = round + 1;
  // Nodes go on past the last round (kNoLastRound), so it is copied too.
  if (done <= s_.rounds() && (done % s_.eval_every() == 0 || done == s_.rounds())) {
    Snapshot& snap = snapshots_[done];
    if (snap.params.empty()) {
      snap.params.resize(n_);
      snap.loss.resize(n_);
    }
    snap.params[node] = nodes_[node]->params().Clone();
    snap.loss[node] = loss;
  }
  NodeId& count = completed_[round];
  if (++count < honest_) return;
  completed_.erase(round);
  rounds_done_ = done;
  if (progress_) progress_(rounds_done_, s_.rounds(), nullptr);
  if (rounds_done_ % s_.eval_every() == 0 || rounds_done_ == s_.rounds()) Evaluate(rounds_done_);
  // Every node has finished the last round: stop, though the nodes would go
  // on (kNoLastRound) and churn may still have events queued.
  if (rounds_done_ == s_.rounds()) sim_->Stop();
}

void ScenarioRun::Evaluate(std::uint64_t round) {
  std::vector<const ParamVector*> params;
  params.reserve(nodes_.size());
  auto snap = snapshots_.find(round);
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    if (nodes_[i] == nullptr) continue;  // a Byzantine node
    params.push_back(snap != snapshots_.end() ? &snap->second.params[i] : &nodes_[i]->params());
  }
  EvalPoint p = evaluator_->Evaluate(params);
  StampPoint(*sim_, n_, round, WallSeconds(), &p);
  const std::vector<double>& losses = snap != snapshots_.end() ? snap->second.loss : last_loss_;
  double loss = 0;
  for (double l : losses) loss += l;  // Byzantine nodes report none: 0
  p.train_loss = loss / static_cast<double>(honest_);
  if (snap != snapshots_.end()) snapshots_.erase(snap);
  summary_.points.push_back(p);
  writer_->Write(p);
  if (progress_) progress_(round, s_.rounds(), &summary_.points.back());
}

RunSummary ScenarioRun::Run() {
  Evaluate(0);
  const bool gl = s_.algorithm() == "gossip-learning";
  const double horizon_s = gl ? s_.period() * static_cast<double>(s_.rounds()) : 0;
  const double churn_horizon_s = s_.time_budget() > 0 ? s_.time_budget() : (gl ? horizon_s : 1e9);
  StartScenarioChurn(*sim_, s_, *world_, FromSeconds(churn_horizon_s), {});
  if (gl) {
    // Gossip learning has no rounds: evaluate every eval_every periods, and
    // count a "round" as one period (one wake-up per node on average).
    for (std::uint64_t r = s_.eval_every(); r <= s_.rounds(); r += s_.eval_every()) {
      sim_->At(FromSeconds(s_.period() * static_cast<double>(r)), [this, r] {
        rounds_done_ = r;
        Evaluate(r);
      });
    }
  }
  for (auto& n : nodes_) {
    if (n != nullptr) n->Start();
  }
  Nanos until = s_.time_budget() > 0 ? FromSeconds(s_.time_budget()) : Nanos::max();
  if (gl) until = std::min(until, FromSeconds(horizon_s + 1e-9));
  sim_->RunUntil(until);
  if (summary_.points.empty() || summary_.points.back().round != rounds_done_) Evaluate(rounds_done_);
  FinishSummary(*sim_, rounds_done_, WallSeconds(), &summary_);
  for (const auto& e : faulty_envs_) summary_.faults += e->stats();
  for (const auto& d : decoding_sinks_) {
    summary_.corrupt_rejected += d->rejected();
    summary_.corrupt_accepted += d->accepted();
  }
  return std::move(summary_);
}

}  // namespace

Result<RunSummary> RunScenario(const proto::Scenario& s, const ProgressFn& progress) {
  MURMUR_RETURN_IF_ERROR(ValidateScenario(s));
  if (IsFederatedAlgorithm(s.algorithm())) return RunFederatedScenario(s, progress);
  MURMUR_ASSIGN_OR_RETURN(std::unique_ptr<World> world, BuildWorld(s));
  ScenarioRun run(s, std::move(world), progress);
  MURMUR_RETURN_IF_ERROR(run.Build());
  return run.Run();
}

}  // namespace murmur::sim
