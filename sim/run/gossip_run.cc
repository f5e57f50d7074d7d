#include "sim/run/gossip_run.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <sstream>

#include "engine/gossip_builder.h"
#include "federated/attack.h"
#include "sim/adversary/byzantine.h"
#include "sim/adversary/faults.h"
#include "sim/adversary/tap_env.h"
#include "sim/net/churn.h"
#include "sim/net/simulator.h"
#include "sim/ranks/ranks.h"
#include "sim/run/build_run.h"
#include "sim/run/evaluator.h"
#include "sim/run/external_learning.h"
#include "sim/run/scenario.h"
#include "sim/run/windows.h"
#include "sim/run/world.h"

namespace murmur::sim {

namespace {

using Clock = std::chrono::steady_clock;

class ScenarioRun final : public RoundObserver {
 public:
  ScenarioRun(const ScenarioPlan& plan, std::unique_ptr<World> world, const ProgressFn& progress,
              const RunOptions& options)
      : s_(plan.scenario()),
        spec_(plan.scenario().spec()),
        plan_(plan.job()),
        world_(std::move(world)),
        n_(static_cast<NodeId>(spec_.nodes() + world_->attached_to.size())),
        progress_(progress),
        options_(options),
        start_(Clock::now()),
        ranks_(RanksOr(options_.ranks, own_ranks_)) {}

  Status Build();
  RunSummary Run();

  void OnRoundDone(NodeId node, std::uint64_t round, double loss) override;

 private:
  // Evaluates round `round` as it stood at the end of instant `at`, with the
  // network's totals then (summed over the ranks); from the snapshots taken
  // as nodes finished it, or the live models when there are none.
  void Evaluate(std::uint64_t round, Nanos at, TrafficTotals totals);
  // The same with this instant's totals (every rank at the same point).
  void EvaluateNow(std::uint64_t round, Nanos at);
  // After each window: the rounds every node of every rank has finished are
  // evaluated where due. False once the last round is done.
  bool AfterWindow();
  Status CheckPartitionable() const;
  // Whether round `done` is an evaluation point (eval_every 0: only the end).
  bool EvaluatedAt(std::uint64_t done) const {
    return spec_.eval_every() > 0 && done % spec_.eval_every() == 0;
  }
  Status BuildByzantine();
  Nanos FittedRoundTimeout() const;
  const proto::Scenario& s_;
  const proto::JobSpec& spec_;
  const engine::JobPlan& plan_;

  std::unique_ptr<World> world_;
  NodeId n_;  // simulated nodes: the scenario's, and Byzantine ones attached to them
  ProgressFn progress_;
  RunOptions options_;
  Clock::time_point start_;
  std::unique_ptr<RankGroup> own_ranks_;
  RankGroup* ranks_;  // options_.ranks, or own_ranks_
  double WallSeconds() const { return std::chrono::duration<double>(Clock::now() - start_).count(); }
  std::unique_ptr<Simulator> sim_;
  // Injected faults: a FaultyEnv around each node's SimEnv and, when messages
  // may be corrupted, a DecodingSink in front of each node. Declared after
  // sim_ (the envs cancel their timers on it) and before the nodes that use them.
  std::unique_ptr<FaultPlan> fault_plan_;
  std::vector<std::unique_ptr<FaultyEnv>> faulty_envs_;
  std::vector<std::unique_ptr<DecodingSink>> decoding_sinks_;
  std::vector<std::unique_ptr<LocalLearner>> learners_;
  std::vector<std::unique_ptr<gossip::Node>> nodes_;  // null for a Byzantine node
  std::unique_ptr<ByzantineCoalition> coalition_;
  std::vector<std::unique_ptr<TapEnv>> taps_;
  NodeId honest_ = 0;            // nodes that learn (all but the Byzantine ones)
  NodeId local_honest_ = 0;      // of them, those this rank runs
  bool group_of_sites_ = false;  // hierarchical groups are the link model's sites
  std::unique_ptr<Evaluator> evaluator_;
  std::unique_ptr<MetricsWriter> writer_;
  std::vector<double> last_loss_;
  std::map<std::uint64_t, NodeId> completed_;  // round -> this rank's nodes done with it
  std::uint64_t local_done_ = 0;               // rounds every node of this rank has finished
  // Evaluated rounds (and the last) that this rank's nodes have all finished,
  // and when the last of them did; the round was done everywhere at the
  // latest of these times over the ranks.
  std::map<std::uint64_t, Nanos> local_finish_;
  // Evaluation round -> every node's model as it finished that round. Nodes
  // that finish early start (and, in the simulator, compute) their next
  // round's local steps before the last node is done; evaluating their live
  // models would mix end-of-round and mid-round states.
  struct Snapshot {
    std::vector<ParamVector> params;
    std::vector<double> loss;
  };
  std::map<std::uint64_t, Snapshot> snapshots_;
  // Evaluated snapshots, kept for the next evaluation round: their buffers are
  // allocated (and their pages touched) once per run, not once per round.
  std::vector<Snapshot> spare_snapshots_;
  Snapshot TakeSnapshot();
  std::uint64_t rounds_done_ = 0;
  Nanos last_evaluated_at_{0};
  std::uint64_t last_evaluated_messages_ = 0;  // messages sent by then, all ranks
  RunSummary summary_;
};

// Byzantine-robust gossip (docs/security.md): the Byzantine nodes and their
// attack. The honest nodes' mixing rule is the spec's (engine/gossip_builder.h).
Status ScenarioRun::BuildByzantine() {
  const NodeId n = n_;
  honest_ = n;
  AttackParams params;
  params.kind = plan_.gossip().attack;
  // Placement (sim/adversary/byzantine_placement.h): extra nodes after the scenario's, or members chosen by
  // the seed.
  std::vector<bool> byzantine(n, false);
  if (!world_->attached_to.empty()) {
    for (NodeId i = spec_.nodes(); i < n; ++i) byzantine[i] = true;
  } else {
    byzantine = ChooseByzantine(n, spec_.attack_fraction(), spec_.seed());
  }
  std::size_t f = 0;
  for (bool b : byzantine) f += b;
  if (params.kind == GossipAttack::kNone || f == 0) return Status::Ok();
  if (f >= n) return Status::InvalidArgument("spec field 'attack_fraction': no honest node would be left");
  params.scale = spec_.attack_scale();
  params.alie_z = federated::AlieZ(n, f);
  coalition_ =
      std::make_unique<ByzantineCoalition>(*sim_, world_->topology->In(0), std::move(byzantine), params);
  honest_ = static_cast<NodeId>(n - f);
  return Status::Ok();
}

Nanos ScenarioRun::FittedRoundTimeout() const {
  double flops = 0;  // every node's model is the same: any of this rank's learners tells
  for (const auto& l : learners_) {
    if (l != nullptr) {
      flops = l->FlopsPerStep() * static_cast<double>(spec_.local_steps());
      break;
    }
  }
  return sim::FittedRoundTimeout(*world_, s_, n_, flops);
}

Status ScenarioRun::Build() {
  const NodeId n = n_;
  SimulatorOptions so;
  so.seed = spec_.seed();
  so.threads = s_.threads() == 0 ? HardwareThreads() : static_cast<int>(s_.threads());
  so.network = ScenarioNetwork(s_);
  so.network.links = world_->links;
  so.serial_work = options_.learning != nullptr && !options_.learning->concurrent;
  so.interrupt = options_.interrupt;
  MURMUR_ASSIGN_OR_RETURN(so.placement,
                          PlaceNodes(s_.placement(), world_->schedule.get(), n, *ranks_, spec_.seed()));
  so.decoder = GossipWireDecoder();
  sim_ = std::make_unique<Simulator>(so, world_->devices);
  MURMUR_RETURN_IF_ERROR(BuildByzantine());
  MURMUR_RETURN_IF_ERROR(CheckPartitionable());
  const Placement& place = sim_->placement();
  summary_.placement = place.blocks() ? "blocks" : "graph";
  if (HasScenarioFaults(s_)) {
    MURMUR_ASSIGN_OR_RETURN(fault_plan_, MakeScenarioFaultPlan(s_));
    for (NodeId i = 0; i < n; ++i)
      faulty_envs_.push_back(std::make_unique<FaultyEnv>(&sim_->env(i), fault_plan_.get()));
  }
  last_loss_.assign(n, 0.0);
  learners_.resize(spec_.nodes());
  for (NodeId i : place.local_nodes()) {
    if (i >= spec_.nodes())
      break;  // attached Byzantine nodes do not learn; another rank's nodes are built there
    MURMUR_ASSIGN_OR_RETURN(learners_[i], MakeNodeLearner(options_.learning, *world_, plan_, i,
                                                          world_->data.train, world_->partition->node(i)));
  }
  const Nanos fitted_timeout = FittedRoundTimeout();
  // Hierarchical all-reduce groups: the link model's sites when there are
  // as many as groups (the groups follow the fast links), else id blocks.
  std::vector<std::uint32_t> group_of;
  if (spec_.groups() > 1 && world_->links != nullptr && world_->links->num_sites() == spec_.groups()) {
    group_of = world_->links->Sites();
    group_of_sites_ = true;
  }
  for (NodeId i = 0; i < n; ++i) {
    if (!place.local(i)) {  // another rank's
      nodes_.push_back(nullptr);
      continue;
    }
    if (coalition_ != nullptr && coalition_->byzantine(i)) {
      MessageSink* sink = coalition_.get();
      if (s_.faults().corrupt() > 0) {  // so that every corrupted message meets a decoder and is counted
        decoding_sinks_.push_back(std::make_unique<DecodingSink>(sink, GossipWireDecoder()));
        sink = decoding_sinks_.back().get();
      }
      sim_->SetSink(i, sink);
      nodes_.push_back(nullptr);
      continue;
    }
    // SimEnv, then injected faults, then the coalition's tap (it sees what the node meant to send).
    Env* env = fault_plan_ ? static_cast<Env*>(faulty_envs_[i].get()) : &sim_->env(i);
    if (coalition_ != nullptr) {
      taps_.push_back(std::make_unique<TapEnv>(env, *coalition_));
      env = taps_.back().get();
    }
    engine::GossipHost host;
    host.env = env;
    host.group_of = group_of.empty() ? nullptr : &group_of;
    host.topology = world_->topology.get();
    host.learner = learners_[i].get();
    host.observer = this;
    host.auto_round_timeout = fitted_timeout;
    host.nodes = n;
    // Synchronous nodes are not told where the run ends. A run of R rounds is
    // the first R rounds of a longer one: nodes that finish round R early go on
    // into round R + 1, as they would in a longer run, until the last node has
    // finished round R and the run stops. Their next round's traffic shares the
    // links with the stragglers' last messages; were they to stop at R, the
    // stragglers' last round would see less contention, make more deadlines,
    // and round R's metrics would depend on whether the run goes on.
    host.open_ended = true;
    MURMUR_ASSIGN_OR_RETURN(auto node, engine::MakeGossipNode(plan_, world_->initial.Clone(), host));
    nodes_.push_back(std::move(node));
    MessageSink* sink = nodes_.back().get();
    if (s_.faults().corrupt() > 0) {
      decoding_sinks_.push_back(std::make_unique<DecodingSink>(sink, GossipWireDecoder()));
      sink = decoding_sinks_.back().get();
    }
    sim_->SetSink(i, sink);
    summary_.state_bytes += nodes_.back()->state_floats() * sizeof(float);
    ++local_honest_;
  }
  evaluator_ = MakeEvaluator(options_.learning, *world_, s_.eval_nodes(), s_.eval_samples(), spec_.seed(),
                             sim_->pool());
  // Rank 0 alone writes the metrics.
  auto writer = ranks_->rank() == 0 ? MetricsWriter::Open(s_.metrics_csv(), s_.metrics_json())
                                    : MetricsWriter::Open("", "");
  if (!writer.ok()) return writer.status();
  writer_ = std::move(writer).value();
  std::ostringstream d;
  d << n << " nodes, " << world_->topology_description << ", " << spec_.algorithm() << ", " << spec_.model()
    << " (" << world_->initial.size() << " parameters), " << spec_.dataset() << " " << spec_.partition()
    << ", compression " << plan_.gossip().compression;
  if (spec_.gossip_aggregation() != "mean") d << ", gossip aggregation " << spec_.gossip_aggregation();
  if (world_->links != nullptr) d << ", links: " << world_->links->Describe();
  if (spec_.collective() != "ring") d << ", collective " << spec_.collective();
  if (spec_.groups() > 1) {
    d << ", " << spec_.groups() << " groups of " << n / spec_.groups() << " ("
      << (group_of_sites_ ? "the link model's sites" : "id blocks") << ") mixing over "
      << spec_.group_topology();
  }
  if (honest_ < n) {
    d << ", " << n - honest_ << " Byzantine nodes (" << spec_.attack();
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
  summary_.ranks = ranks_->size();
  return Status::Ok();
}

// What a partitioned run can spread over ranks today; every rank finds the
// same answer (the same scenario), so all of them return the error.
Status ScenarioRun::CheckPartitionable() const {
  MURMUR_RETURN_IF_ERROR(CheckSpreadable(*sim_, *ranks_, n_, "nodes", options_.learning != nullptr));
  if (ranks_->size() == 1) return Status::Ok();
  if (coalition_ != nullptr)
    return OneRankOnly("a scenario with Byzantine nodes (their coalition sees every node)");
  if (HasScenarioFaults(s_)) return OneRankOnly("a scenario with injected faults");
  // A SUMO trace gives every rank the same graph for each round (RoundContacts);
  // the grid's vehicles move as the rounds are asked for, in each rank's order.
  if (plan_.vehicles() && s_.sumo_fcd().empty())
    return OneRankOnly("the vehicles topology on a grid (its graphs follow the order rounds are asked in)");
  return Status::Ok();
}

void ScenarioRun::OnRoundDone(NodeId node, std::uint64_t round, double loss) {
  last_loss_[node] = loss;
  if (plan_.algorithm() == engine::Algorithm::kGossipLearning) return;  // evaluated on a clock instead
  const std::uint64_t done = round + 1;
  const bool evaluated = done <= spec_.rounds() && (EvaluatedAt(done) || done == spec_.rounds());
  // Nodes go on past the last round (GossipHost::open_ended), so it is copied too.
  if (evaluated) {
    auto [it, fresh] = snapshots_.try_emplace(done);
    Snapshot& snap = it->second;
    if (fresh) snap = TakeSnapshot();
    ParamVector& copy = snap.params[node];
    const ParamVector& x = nodes_[node]->params();
    if (copy.size() == x.size()) {
      copy.CopyFrom(x);
    } else {
      copy = x.Clone();
    }
    snap.loss[node] = loss;
  }
  NodeId& count = completed_[round];
  if (++count < local_honest_) return;
  completed_.erase(round);
  local_done_ = done;
  if (evaluated) {
    // The totals at the end of this instant may be asked for once every rank
    // is done with the round (AfterWindow).
    local_finish_[done] = sim_->now();
    sim_->RecordTotalsFrom(local_finish_.begin()->second);
  }
}

bool ScenarioRun::AfterWindow() {
  std::int64_t done = static_cast<std::int64_t>(local_done_);
  ranks_->AllReduceMin(std::span(&done, 1));
  while (rounds_done_ < static_cast<std::uint64_t>(done)) {
    const std::uint64_t r = ++rounds_done_;
    if (progress_) progress_(rounds_done_, spec_.rounds(), nullptr);
    auto finish = local_finish_.find(r);
    if (finish == local_finish_.end()) continue;
    // Every node finished round r by the latest of the ranks' finishing times.
    std::int64_t at = finish->second.count();
    ranks_->AllReduceMax(std::span(&at, 1));
    local_finish_.erase(finish);
    const TrafficTotals mine = sim_->TotalsAt(Nanos(at));
    Evaluate(r, Nanos(at), mine);
    sim_->RecordTotalsFrom(local_finish_.empty() ? Nanos::max() : local_finish_.begin()->second);
    // Every node has finished the last round: stop, though the nodes would go
    // on (GossipHost::open_ended) and churn may still have events queued.
    if (r == spec_.rounds()) return false;
  }
  return true;
}

void ScenarioRun::EvaluateNow(std::uint64_t round, Nanos at) { Evaluate(round, at, sim_->Totals()); }

void ScenarioRun::Evaluate(std::uint64_t round, Nanos at, TrafficTotals totals) {
  totals = SumOverRanks(*ranks_, totals);
  last_evaluated_messages_ = totals.messages_sent;
  std::vector<const ParamVector*> params;
  std::vector<double> losses;
  std::vector<std::size_t> positions;  // among the learning nodes: Byzantine ones only run on one rank
  params.reserve(nodes_.size());
  auto snap = snapshots_.find(round);
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    if (nodes_[i] == nullptr) continue;  // a Byzantine node, or another rank's
    positions.push_back(coalition_ == nullptr ? i : positions.size());
    const bool from_snap = snap != snapshots_.end();
    params.push_back(from_snap ? &snap->second.params[i] : &nodes_[i]->params());
    losses.push_back(from_snap ? snap->second.loss[i] : last_loss_[i]);
  }
  // The models of the last round, as the nodes ended it (they go on past it).
  if (options_.keep_final_models && round == spec_.rounds())
    for (const ParamVector* x : params)
      summary_.final_models.emplace_back(x->span().begin(), x->span().end());
  EvalPoint p = evaluator_->Evaluate(params, losses, *ranks_, positions, honest_);
  StampPoint(totals, at, round, WallSeconds(), &p);
  last_evaluated_at_ = at;
  if (snap != snapshots_.end()) {
    spare_snapshots_.push_back(std::move(snap->second));
    snapshots_.erase(snap);
  }
  summary_.points.push_back(p);
  writer_->Write(p);
  if (progress_) progress_(round, spec_.rounds(), &summary_.points.back());
}

ScenarioRun::Snapshot ScenarioRun::TakeSnapshot() {
  if (!spare_snapshots_.empty()) {
    Snapshot snap = std::move(spare_snapshots_.back());
    spare_snapshots_.pop_back();
    return snap;
  }
  Snapshot snap;
  snap.params.resize(n_);
  snap.loss.resize(n_);
  return snap;
}

RunSummary ScenarioRun::Run() {
  EvaluateNow(0, Nanos(0));
  const bool gl = plan_.algorithm() == engine::Algorithm::kGossipLearning;
  if (!gl) {  // the first evaluated round's snapshot, allocated with the nodes
    Snapshot snap = TakeSnapshot();
    for (NodeId i = 0; i < n_; ++i)
      if (nodes_[i] != nullptr) snap.params[i] = nodes_[i]->params().Clone();
    spare_snapshots_.push_back(std::move(snap));
  }
  const double horizon_s = gl ? spec_.period() * static_cast<double>(spec_.rounds()) : 0;
  const double churn_horizon_s = s_.time_budget() > 0 ? s_.time_budget() : (gl ? horizon_s : 1e9);
  StartScenarioChurn(*sim_, s_, *world_, FromSeconds(churn_horizon_s), {});
  for (auto& n : nodes_) {
    if (n != nullptr) n->Start();
  }
  Nanos until = s_.time_budget() > 0 ? FromSeconds(s_.time_budget()) : Nanos::max();
  if (gl) until = std::min(until, FromSeconds(horizon_s + 1e-9));
  // Gossip learning has no rounds: it is evaluated every eval_every periods
  // (after the events of that instant), a "round" being one period (one
  // wake-up per node on average).
  std::uint64_t next_eval = gl ? spec_.eval_every() : 0;
  auto eval_time = [&] { return FromSeconds(spec_.period() * static_cast<double>(next_eval)); };
  WindowHooks hooks;
  hooks.next_barrier = [&] {
    return next_eval > 0 && next_eval <= spec_.rounds() ? eval_time() : Nanos::max();
  };
  hooks.after_window = [&](Nanos end) {
    if (!gl) return AfterWindow();
    if (next_eval > 0 && next_eval <= spec_.rounds() && end > eval_time()) {
      rounds_done_ = next_eval;
      EvaluateNow(next_eval, eval_time());
      next_eval += spec_.eval_every();
    }
    return true;
  };
  const WindowsRun windows = RunWindows(*sim_, *ranks_, until, hooks);
  const WindowsEnd ended = windows.end;
  const Nanos now = WhereRunEnded(windows, until, last_evaluated_at_, *sim_, *ranks_);
  if (gl) {
    // The periods that passed: every node has had its wake-ups up to now, also
    // past the last evaluation point (or before the first).
    const auto periods = static_cast<std::uint64_t>(
        std::floor(std::chrono::duration<double>(now).count() / spec_.period() + 1e-9));
    rounds_done_ = std::min<std::uint64_t>(spec_.rounds(), periods);
  }
  if (summary_.points.empty() || summary_.points.back().round != rounds_done_) EvaluateNow(rounds_done_, now);
  FinishSpreadSummary(*sim_, *ranks_, windows, rounds_done_, WallSeconds(), now, last_evaluated_messages_,
                      &summary_);
  if (rounds_done_ == spec_.rounds()) {
    summary_.stop_reason = "rounds done";
  } else if (ended == WindowsEnd::kInterrupted) {
    summary_.stop_reason = "interrupted";
  } else if (s_.time_budget() > 0 && now >= FromSeconds(s_.time_budget())) {
    summary_.stop_reason = "time budget";
  } else {
    summary_.stop_reason = "no more events (the nodes that were left could not finish their rounds)";
  }
  summary_.points.back().stop = summary_.stop_reason;
  writer_->Finish(summary_.stop_reason);
  for (const auto& e : faulty_envs_) summary_.faults += e->stats();
  for (const auto& d : decoding_sinks_) {
    summary_.corrupt_rejected += d->rejected();
    summary_.corrupt_accepted += d->accepted();
  }
  if (options_.keep_final_models && summary_.final_models.empty()) {  // stopped before its last round
    for (const auto& node : nodes_)
      if (node != nullptr)
        summary_.final_models.emplace_back(node->params().span().begin(), node->params().span().end());
  }
  return std::move(summary_);
}

}  // namespace

Result<RunSummary> RunGossipScenario(const ScenarioPlan& plan, const ProgressFn& progress,
                                     RunOptions options) {
  MURMUR_ASSIGN_OR_RETURN(auto run, BuildOnRanks<ScenarioRun>(plan, progress, options));
  return run->Run();
}

}  // namespace murmur::sim
