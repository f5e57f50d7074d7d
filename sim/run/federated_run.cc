#include "sim/run/federated_run.h"

#include <algorithm>
#include <chrono>
#include <limits>
#include <map>
#include <sstream>

#include "core/remapped_env.h"
#include "crypto/identity.h"
#include "engine/federated_builder.h"
#include "federated/client.h"
#include "federated/server.h"
#include "ml/ml_learner.h"
#include "sim/adversary/faults.h"
#include "sim/adversary/label_flip.h"
#include "sim/net/churn.h"
#include "sim/net/simulator.h"
#include "sim/ranks/ranks.h"
#include "sim/run/build_run.h"
#include "sim/run/evaluator.h"
#include "sim/run/external_learning.h"
#include "sim/run/federated_edges.h"
#include "sim/run/federated_wire.h"
#include "sim/run/scenario.h"
#include "sim/run/windows.h"
#include "sim/run/world.h"

namespace murmur::sim {

namespace {

using Clock = std::chrono::steady_clock;

class FederatedRun final : public RoundObserver {
 public:
  FederatedRun(const ScenarioPlan& plan, std::unique_ptr<World> world, const ProgressFn& progress,
               const RunOptions& options)
      : s_(plan.scenario()),
        spec_(plan.scenario().spec()),
        plan_(plan.job()),
        world_(std::move(world)),
        progress_(progress),
        options_(options),
        start_(Clock::now()),
        ranks_(RanksOr(options_.ranks, own_ranks_)) {}

  Status Build();
  RunSummary Run(FederatedStats* stats);
  void OnRoundDone(NodeId node, std::uint64_t round, double loss) override;

 private:
  // The server's rank measures the server's model now: the point of round
  // `round` but for the traffic and online counts of its instant.
  EvalPoint Measure(std::uint64_t round) const;
  // Every rank: the point measured at `at` on the server's rank (`measured`
  // there), with the traffic and online counts of the end of instant `at`
  // summed over the ranks, shared, written and reported.
  void Publish(std::uint64_t round, EvalPoint measured, Nanos at, TrafficTotals totals);
  // After each window: rounds the server finished are evaluated where due.
  // False once the server is done.
  bool AfterWindow();
  Status CheckPartitionable() const;
  Placement PlaceFederated(NodeId clients, NodeId edges);
  bool server_here() const { return server_ != nullptr; }
  int server_rank() const { return sim_->placement().RankOf(top_); }
  void SetOnline(NodeId node, bool online);
  void AssignToRsus();
  std::vector<std::uint8_t> StayingInRange() const;

  const proto::Scenario& s_;
  const proto::JobSpec& spec_;
  const engine::JobPlan& plan_;
  // edge_assignment nearest-rsu (with edge aggregators): vehicles to their nearest RSU.
  const bool by_rsu_ = plan_.fed().edge_assignment == engine::FederatedPlan::EdgeAssignment::kNearestRsu;

  std::unique_ptr<World> world_;
  ProgressFn progress_;
  RunOptions options_;
  Clock::time_point start_;
  std::unique_ptr<RankGroup> own_ranks_;
  RankGroup* ranks_;  // options_.ranks, or own_ranks_
  double WallSeconds() const { return std::chrono::duration<double>(Clock::now() - start_).count(); }
  std::unique_ptr<Simulator> sim_;
  std::vector<std::unique_ptr<LocalLearner>> learners_;
  std::vector<crypto::Identity> identities_;                    // SecAgg+ only
  FlippedData flipped_;                                         // label-flip attackers' data
  std::vector<std::unique_ptr<federated::FedClient>> clients_;  // null: another rank's
  std::unique_ptr<federated::FedServer> server_;                // null: on another rank
  NodeId top_ = 0;                                              // the server's node id
  // Hierarchical runs (sim/run/federated_edges.h): clients, then the edge aggregators, then the top.
  NodeId num_clients_ = 0;
  std::vector<std::uint32_t> edge_of_;
  std::vector<std::unique_ptr<federated::EdgeAggregator>> edges_;  // null: another rank's
  std::unique_ptr<RemappedEnv> top_env_;
  std::unique_ptr<RemappedSink> top_sink_;
  std::unique_ptr<Evaluator> evaluator_;
  std::unique_ptr<MetricsWriter> writer_;
  double last_loss_ = 0;
  std::uint64_t rounds_done_ = 0;    // rounds every rank knows the server finished
  std::uint64_t server_rounds_ = 0;  // the server's rank: rounds the server finished
  // The server's rank: the points of evaluated rounds, measured as the server
  // finished them, and when; published after the window.
  std::map<std::uint64_t, std::pair<EvalPoint, Nanos>> measured_;
  Nanos last_evaluated_at_{0};
  std::uint64_t last_evaluated_messages_ = 0;
  RunSummary summary_;
};

Status FederatedRun::Build() {
  const NodeId n = plan_.fed().clients;
  const NodeId num_edges = spec_.edge_aggregators();
  num_clients_ = n;
  const std::string& a = spec_.algorithm();
  std::vector<DeviceProfile> devices = world_->devices;
  devices.resize(n);
  if (num_edges > 0) {
    MURMUR_ASSIGN_OR_RETURN(auto edge_devices,
                            MakeDeviceProfiles(s_.edge_devices(), num_edges, spec_.seed() + 2));
    for (auto& d : edge_devices) d.availability = 1.0;  // edge aggregators are infrastructure: no churn
    devices.insert(devices.end(), edge_devices.begin(), edge_devices.end());
    edge_of_ = by_rsu_ ? NearestRsu(*world_->mobility, n, num_edges) : EdgesById(n, num_edges);
  }
  const NodeId top = n + num_edges;
  top_ = top;
  MURMUR_ASSIGN_OR_RETURN(auto server_device, MakeDeviceProfiles("edge-server", 1, spec_.seed() + 1));
  devices.push_back(server_device[0]);
  SimulatorOptions so;
  so.seed = spec_.seed();
  so.threads = s_.threads() == 0 ? HardwareThreads() : static_cast<int>(s_.threads());
  so.network = ScenarioNetwork(s_);
  if (!s_.radio_rate().empty()) so.network.links = world_->links;  // vehicles' radios (sim/net/radio_links.h)
  so.serial_work = options_.learning != nullptr && !options_.learning->concurrent;
  so.interrupt = options_.interrupt;
  so.placement = PlaceFederated(n, num_edges);
  so.decoder = FederatedWireDecoder();
  so.online_counted = n;  // clients, not the aggregators
  sim_ = std::make_unique<Simulator>(so, std::move(devices));
  MURMUR_RETURN_IF_ERROR(CheckPartitionable());
  const Placement& place = sim_->placement();

  const engine::FederatedHost
      fed_host;  // SecAgg+ secrets from the run's streams; the server plays every attacker
  federated::ServerOptions o = engine::MakeServerOptions(plan_, fed_host);
  federated::SignKeyDirectory directory;
  o.max_weight =
      spec_.max_weight() > 0 ? spec_.max_weight() : AutoMaxWeight(*world_->partition, n, num_edges > 0);
  double max_samples = 1;
  if (spec_.secure_aggregation()) {
    identities_.reserve(n);
    for (NodeId i = 0; i < n; ++i) {
      std::array<std::uint8_t, crypto::kSignSeedSize> seed{};
      Rng rng(spec_.seed(), i, RngPurpose::kSecureAggregation);
      for (auto& b : seed) b = static_cast<std::uint8_t>(rng.NextU32());
      identities_.push_back(crypto::Identity::FromSeed(seed));
      max_samples = std::max(max_samples, static_cast<double>(world_->partition->node(i).size()));
    }
    directory = [this](NodeId id) -> const crypto::SignPublicKey* {
      return id < identities_.size() ? &identities_[id].public_key() : nullptr;
    };
    o.secagg.directory = directory;
  }

  if (o.attack == federated::AttackKind::kLabelFlip) {
    flipped_ = FlipAttackerLabels(world_->data.train, *world_->partition, o.attacker);
  }
  learners_.resize(n);
  clients_.resize(n);
  for (NodeId i = 0; i < n; ++i) {
    if (!place.local(i)) continue;  // another rank's
    auto part = world_->partition->node(i);
    const bool flip = engine::FlipsLabels(plan_, i);
    MURMUR_ASSIGN_OR_RETURN(
        learners_[i],
        MakeNodeLearner(options_.learning, *world_, plan_, i, flip ? flipped_.data : world_->data.train,
                        flip ? std::span<const ml::SampleIndex>(flipped_.parts[i]) : part));
    federated::ClientOptions co =
        engine::MakeClientOptions(plan_, i, static_cast<double>(part.size()), max_samples, fed_host);
    if (spec_.secure_aggregation()) {
      co.secagg.identity = &identities_[i];
      co.secagg.directory = directory;
    }
    const NodeId server = num_edges > 0 ? n + edge_of_[i] : n;
    clients_[i] = engine::MakeFedClient(sim_->env(i), server, *learners_[i], world_->initial.layout(), co);
    sim_->SetSink(i, clients_[i].get());
    summary_.state_bytes += clients_[i]->state_floats() * sizeof(float);
  }
  if (num_edges > 0) {
    for (NodeId e = 0; e < num_edges; ++e) {
      std::vector<NodeId> members;  // nearest-rsu: every vehicle, restricted per round by SetCluster
      for (NodeId i = 0; i < n; ++i) {
        if (by_rsu_ || edge_of_[i] == e) members.push_back(i);
      }
      if (members.empty())
        return Status::InvalidArgument("scenario field 'edge_aggregators': edge " + std::to_string(e) +
                                       " has no clients");
      if (!place.local(n + e)) {  // another rank's
        edges_.push_back(nullptr);
        continue;
      }
      edges_.push_back(engine::MakeEdgeAggregator(sim_->env(n + e), world_->initial.layout(), o, top,
                                                  std::move(members), n));
      sim_->SetSink(n + e, edges_.back().get());
      summary_.state_bytes += edges_.back()->state_floats() * sizeof(float);
    }
    if (by_rsu_) AssignToRsus();
  }
  if (!place.local(top)) {
    // The server runs on another rank.
  } else if (num_edges > 0) {
    std::vector<NodeId> peers;
    for (NodeId e = 0; e < num_edges; ++e) peers.push_back(n + e);
    top_env_ = std::make_unique<RemappedEnv>(sim_->env(top), peers);
    server_ = engine::MakeTopServer(*top_env_, world_->initial.Clone(), o, num_edges, this);
    top_sink_ = std::make_unique<RemappedSink>(*server_, peers);
    sim_->SetSink(top, top_sink_.get());
  } else {
    server_ = engine::MakeFedServer(sim_->env(n), world_->initial.Clone(), o, this);
    sim_->SetSink(n, server_.get());
  }
  if (server_here()) summary_.state_bytes += server_->state_floats() * sizeof(float);
  evaluator_ = MakeEvaluator(options_.learning, *world_, 1, s_.eval_samples(), spec_.seed(), sim_->pool());
  // Rank 0 alone writes the metrics.
  MURMUR_ASSIGN_OR_RETURN(writer_, ranks_->rank() == 0
                                       ? MetricsWriter::Open(s_.metrics_csv(), s_.metrics_json())
                                       : MetricsWriter::Open("", ""));
  std::ostringstream d;
  d << n << " clients + " << (num_edges > 0 ? std::to_string(num_edges) + " edge aggregators + " : "")
    << "server, " << a << " (" << o.clients_per_round << " per round, aggregation " << spec_.robust() << "), "
    << spec_.model() << " (" << world_->initial.size() << " parameters), " << spec_.dataset() << " "
    << spec_.partition() << ", upload " << spec_.upload_compression();
  const std::vector<bool>& attackers = plan_.fed().attackers;
  if (!attackers.empty()) {
    d << ", " << std::count(attackers.begin(), attackers.end(), true) << " attackers (" << spec_.attack()
      << ")";
  }
  if (spec_.secure_aggregation()) {
    d << ", SecAgg+ (k " << spec_.secagg_neighbours() << ", " << spec_.secagg_bits() << " bits, R "
      << spec_.secagg_range() << ")";
  }
  summary_.description = d.str();
  summary_.params_per_node = world_->initial.size();
  summary_.ranks = ranks_->size();
  return Status::Ok();
}

// Placement auto with edge aggregators (edge_assignment id): each edge with
// its clients (PlaceEdgeClusters); otherwise everything in id blocks, the
// server last.
Placement FederatedRun::PlaceFederated(NodeId clients, NodeId edges) {
  const int ranks = ranks_->size(), rank = ranks_->rank();
  if (ranks == 1 || edges == 0 || by_rsu_ || s_.placement() == "blocks") {
    summary_.placement = "blocks";
    return Placement(clients + edges + 1, ranks, rank);
  }
  summary_.placement = "edge clusters";
  return PlaceEdgeClusters(edge_of_, edges, ranks, rank);
}

// What a federated run can spread over ranks today; every rank finds the same.
Status FederatedRun::CheckPartitionable() const {
  MURMUR_RETURN_IF_ERROR(
      CheckSpreadable(*sim_, *ranks_, num_clients_, "clients", options_.learning != nullptr));
  if (ranks_->size() > 1 && by_rsu_ && spec_.edge_aggregators() > 0)
    return OneRankOnly("nearest-rsu edge assignment (one mobility model for all vehicles)");
  // Every message goes to or from the server: there are no neighbours to keep together.
  if (ranks_->size() > 1 && s_.placement() == "graph")
    return Status::InvalidArgument(
        "scenario field 'placement' graph is for gossip runs: federated runs place clients in id blocks, "
        "the server on the last rank and, with auto, each edge aggregator with its clients (use placement: "
        "auto or blocks)");
  return Status::Ok();
}

// The server (or the edge aggregators) hear of every client's churn, on
// whatever rank the client runs (StartScenarioChurn's every_node).
void FederatedRun::SetOnline(NodeId node, bool online) {
  if (node >= num_clients_) return;
  if (edges_.empty()) {
    if (server_here()) server_->SetOnline(node, online);
    return;
  }
  for (auto& e : edges_)
    if (e != nullptr) e->SetOnline(node, online);
}

// Contact-aware clusters (federated_edges.h StayingInRange): the dense
// model both ways, 3 x the model's forward flops a training sample.
std::vector<std::uint8_t> FederatedRun::StayingInRange() const {
  ClientRoundCost cost;
  cost.model_bits = 32.0 * static_cast<double>(world_->initial.size());
  cost.flops_per_sample = 3 * world_->model->FlopsPerSample();
  cost.local_epochs = static_cast<double>(spec_.local_epochs());
  cost.radio = world_->radio_rate;
  std::vector<double> samples(num_clients_);
  for (NodeId i = 0; i < num_clients_; ++i)
    samples[i] = static_cast<double>(world_->partition->node(i).size());
  return sim::StayingInRange(*world_->mobility, edge_of_, world_->devices, samples, cost);
}

void FederatedRun::AssignToRsus() {
  const auto edges = static_cast<NodeId>(edges_.size());
  world_->mobility->Advance(
      std::max(world_->mobility->time(), std::chrono::duration<double>(sim_->now()).count()));
  edge_of_ = NearestRsu(*world_->mobility, num_clients_, edges);
  const std::vector<std::uint8_t> staying =
      s_.contact_aware() ? StayingInRange() : std::vector<std::uint8_t>();
  for (NodeId e = 0; e < edges; ++e) {
    std::vector<std::uint8_t> in(num_clients_, 0);
    std::size_t size = 0;
    for (NodeId i = 0; i < num_clients_; ++i) {
      in[i] = edge_of_[i] == e && (staying.empty() || staying[i] != 0);
      size += in[i];
    }
    if (edges_[e] != nullptr)
      edges_[e]->SetCluster(std::move(in),
                            engine::EdgeClientsPerRound(plan_.fed().clients_per_round, size, num_clients_));
  }
  for (NodeId i = 0; i < num_clients_; ++i)
    if (clients_[i] != nullptr) clients_[i]->set_server(num_clients_ + edge_of_[i]);
}

// On the server's rank, as the server finishes a round.
void FederatedRun::OnRoundDone(NodeId, std::uint64_t round, double loss) {
  if (spec_.edge_aggregators() > 0 && by_rsu_) AssignToRsus();
  last_loss_ = loss;
  server_rounds_ = round + 1;
  const std::uint64_t r = server_rounds_;
  if ((spec_.eval_every() > 0 && r % spec_.eval_every() == 0) || r == spec_.rounds()) {
    // Measured now: the server goes on with the next round within the window.
    measured_[r] = {Measure(r), sim_->now()};
  }
}

EvalPoint FederatedRun::Measure(std::uint64_t round) const {
  EvalPoint p = evaluator_->Evaluate({&server_->params()});
  p.round = round;
  p.train_loss = last_loss_;
  p.epsilon = server_->epsilon();
  return p;
}

void FederatedRun::Publish(std::uint64_t round, EvalPoint measured, Nanos at, TrafficTotals totals) {
  totals = SumOverRanks(*ranks_, totals);
  StampPoint(totals, at, round, WallSeconds(), &measured);
  if (ranks_->size() > 1) measured = UnpackPoint(ranks_->Broadcast(PackPoint(measured), server_rank()));
  last_evaluated_at_ = at;
  last_evaluated_messages_ = totals.messages_sent;
  summary_.points.push_back(measured);
  writer_->Write(measured);
  if (progress_) progress_(round, spec_.rounds(), &summary_.points.back());
}

bool FederatedRun::AfterWindow() {
  // The rounds the server finished, and whether it is done (its rank knows).
  std::int64_t v[2] = {static_cast<std::int64_t>(server_rounds_),
                       server_here() && server_->finished() ? 1 : 0};
  ranks_->AllReduceMax(v);
  while (rounds_done_ < static_cast<std::uint64_t>(v[0])) {
    const std::uint64_t r = ++rounds_done_;
    if (progress_) progress_(r, spec_.rounds(), nullptr);
    std::int64_t at = std::numeric_limits<std::int64_t>::min();
    EvalPoint p;
    bool evaluated = (spec_.eval_every() > 0 && r % spec_.eval_every() == 0) || r == spec_.rounds();
    if (evaluated) {
      auto m = measured_.find(r);
      if (m != measured_.end()) {
        p = m->second.first;
        at = m->second.second.count();
        measured_.erase(m);
      }
      ranks_->AllReduceMax(std::span(&at, 1));
      Publish(r, p, Nanos(at), sim_->TotalsAt(Nanos(at)));
    }
  }
  // The next window's instants: the server may finish a round in any of
  // them, and every rank is then asked for its totals at that instant.
  sim_->RecordTotalsFrom(sim_->now());
  return v[1] == 0 && rounds_done_ < spec_.rounds();
}

RunSummary FederatedRun::Run(FederatedStats* stats) {
  const bool spread = ranks_->size() > 1;
  {
    EvalPoint p;
    if (server_here()) p = Measure(0);
    Publish(0, p, Nanos(0), sim_->Totals());
  }
  auto on_change = [this](NodeId node, bool online) { SetOnline(node, online); };
  // Spread over ranks, every rank follows every client's churn: the server
  // hears of a client's going and coming wherever the client runs.
  StartScenarioChurn(*sim_, s_, *world_, FromSeconds(s_.time_budget() > 0 ? s_.time_budget() : 1e7),
                     on_change, spread);
  for (NodeId i = 0; i < num_clients_; ++i) SetOnline(i, sim_->online(i));
  // The server is the last node (after the clients and the edge aggregators).
  if (server_here()) sim_->AtNode(top_, Nanos(0), [this] { server_->Start(); });
  const Nanos until = s_.time_budget() > 0 ? FromSeconds(s_.time_budget()) : Nanos::max();
  WindowHooks hooks;
  hooks.after_window = [this](Nanos) { return AfterWindow(); };
  sim_->RecordTotalsFrom(Nanos(0));
  const WindowsRun windows = RunWindows(*sim_, *ranks_, until, hooks);
  const Nanos now = WhereRunEnded(windows, until, last_evaluated_at_, *sim_, *ranks_);
  if (summary_.points.empty() || summary_.points.back().round != rounds_done_) {
    EvalPoint p;
    if (server_here()) p = Measure(rounds_done_);
    Publish(rounds_done_, p, now, sim_->Totals());
  }
  FinishSpreadSummary(*sim_, *ranks_, windows, rounds_done_, WallSeconds(), now, last_evaluated_messages_,
                      &summary_);
  // What the server's rank knows, shared with every rank.
  FederatedStats here;
  if (server_here()) {
    if (server_->finished()) {
      here.stop_reason = server_->stop_reason() == "all rounds done" ? "rounds done" : server_->stop_reason();
    } else if (windows.end == WindowsEnd::kInterrupted) {
      here.stop_reason = "interrupted";
    } else if (s_.time_budget() > 0 && now >= FromSeconds(s_.time_budget())) {
      here.stop_reason = "time budget";
    } else if (spec_.deadline() == 0 && summary_.points.back().messages_lost > 0) {
      // Deadline 0 waits for every selected client still online: one lost
      // task or upload leaves the round open for ever.
      here.stop_reason = "no more events: round " + std::to_string(rounds_done_ + 1) +
                         " waits for a selected client whose task or result was lost (deadline 0 waits for "
                         "every one still online); set a deadline (--deadline SECONDS) so that rounds end "
                         "without it";
    } else {
      here.stop_reason = "no more events (no client could deliver a result)";
    }
    here.epsilon = server_->epsilon();
    here.results_accepted = server_->results_accepted();
    here.results_dropped = server_->results_dropped();
    here.contributors = server_->contributors();
    here.final_model.assign(server_->params().span().begin(), server_->params().span().end());
    here.secagg_rounds_aborted = server_->secagg_rounds_aborted();
    here.secagg_clients_dropped = server_->secagg_clients_dropped();
    const TrafficStats& top = sim_->traffic(top_);
    here.top_bytes_sent = top.bytes_sent;
    here.top_bytes_received = top.bytes_received;
  }
  if (spread) {
    Bytes b;
    const double d[1] = {here.epsilon};
    const std::uint64_t u[8] = {here.results_accepted,      here.results_dropped,        here.contributors,
                                here.secagg_rounds_aborted, here.secagg_clients_dropped, here.top_bytes_sent,
                                here.top_bytes_received,    here.stop_reason.size()};
    PutValues<double>(b, d);
    PutValues<std::uint64_t>(b, u);
    b.insert(b.end(), here.stop_reason.begin(), here.stop_reason.end());
    PutValues<float>(b, here.final_model);
    b = ranks_->Broadcast(std::move(b), server_rank());
    ByteReader in(b);
    here.epsilon = in.Get<double>();
    here.results_accepted = in.Get<std::uint64_t>();
    here.results_dropped = in.Get<std::uint64_t>();
    here.contributors = in.Get<std::uint64_t>();
    here.secagg_rounds_aborted = in.Get<std::uint64_t>();
    here.secagg_clients_dropped = in.Get<std::uint64_t>();
    here.top_bytes_sent = in.Get<std::uint64_t>();
    here.top_bytes_received = in.Get<std::uint64_t>();
    const auto reason = in.Get<std::uint64_t>();
    std::vector<char> text;
    in.Append<char>(text, reason);
    here.stop_reason.assign(text.begin(), text.end());
    here.final_model.clear();
    in.Append<float>(here.final_model, world_->initial.size());
  }
  summary_.stop_reason = here.stop_reason;
  summary_.epsilon = here.epsilon;
  summary_.contributors = here.contributors;
  summary_.clients = num_clients_;
  summary_.points.back().stop = summary_.stop_reason;
  writer_->Finish(summary_.stop_reason);
  if (stats != nullptr) *stats = std::move(here);
  return std::move(summary_);
}

}  // namespace

Result<RunSummary> RunFederatedScenario(const proto::Scenario& s, const ProgressFn& progress) {
  return RunFederatedScenario(s, progress, nullptr);
}

Result<RunSummary> RunFederatedScenario(const proto::Scenario& s, const ProgressFn& progress,
                                        FederatedStats* stats, const RunOptions& options) {
  MURMUR_ASSIGN_OR_RETURN(ScenarioPlan plan, PlanScenario(s));
  return RunFederatedScenario(plan, progress, stats, options);
}

Result<RunSummary> RunFederatedScenario(const ScenarioPlan& plan, const ProgressFn& progress,
                                        FederatedStats* stats, const RunOptions& options) {
  if (!plan.job().federated())
    return Status::InvalidArgument("spec field 'algorithm': '" + plan.job().spec().algorithm() +
                                   "' is not federated");
  MURMUR_ASSIGN_OR_RETURN(auto run, BuildOnRanks<FederatedRun>(plan, progress, options));
  return run->Run(stats);
}

}  // namespace murmur::sim
