#include "sim/federated_run.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <sstream>

#include "core/remapped_env.h"
#include "crypto/identity.h"
#include "engine/algorithms.h"
#include "engine/federated_builder.h"
#include "engine/learner.h"
#include "federated/client.h"
#include "federated/server.h"
#include "gossip/codec.h"
#include "ml/ml_learner.h"
#include "sim/churn.h"
#include "sim/evaluator.h"
#include "sim/external_learning.h"
#include "sim/federated_edges.h"
#include "sim/label_flip.h"
#include "sim/scenario.h"
#include "sim/simulator.h"
#include "sim/world.h"

namespace murmur::sim {

namespace {

using Clock = std::chrono::steady_clock;

class FederatedRun final : public RoundObserver {
 public:
  FederatedRun(const proto::Scenario& s, std::unique_ptr<World> world, const ProgressFn& progress,
               const RunOptions& options)
      : s_(s),
        spec_(s.spec()),
        world_(std::move(world)),
        progress_(progress),
        options_(options),
        start_(Clock::now()) {}

  Status Build();
  RunSummary Run(FederatedStats* stats);
  void OnRoundDone(NodeId node, std::uint64_t round, double loss) override;

 private:
  void Evaluate(std::uint64_t round);
  void SetOnline(NodeId node, bool online);
  void AssignToRsus();

  const proto::Scenario& s_;
  const proto::JobSpec& spec_;
  std::unique_ptr<World> world_;
  ProgressFn progress_;
  RunOptions options_;
  Clock::time_point start_;
  double WallSeconds() const { return std::chrono::duration<double>(Clock::now() - start_).count(); }
  std::unique_ptr<Simulator> sim_;
  std::vector<std::unique_ptr<LocalLearner>> learners_;
  std::vector<crypto::Identity> identities_;  // SecAgg+ only
  FlippedData flipped_;                       // label-flip attackers' data
  std::vector<std::unique_ptr<federated::FedClient>> clients_;
  std::unique_ptr<federated::FedServer> server_;
  // Hierarchical runs (sim/federated_edges.h): clients, then the edge aggregators, then the top.
  NodeId num_clients_ = 0;
  std::vector<std::uint32_t> edge_of_;
  std::vector<std::unique_ptr<federated::EdgeAggregator>> edges_;
  std::unique_ptr<RemappedEnv> top_env_;
  std::unique_ptr<RemappedSink> top_sink_;
  std::unique_ptr<Evaluator> evaluator_;
  std::unique_ptr<MetricsWriter> writer_;
  double last_loss_ = 0;
  std::uint64_t rounds_done_ = 0;
  RunSummary summary_;
};

Status FederatedRun::Build() {
  const NodeId n = engine::FederatedClients(spec_);
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
    edge_of_ = spec_.edge_assignment() == "nearest-rsu" ? NearestRsu(*world_->mobility, n, num_edges)
                                                        : EdgesById(n, num_edges);
  }
  const NodeId top = n + num_edges;
  MURMUR_ASSIGN_OR_RETURN(auto server_device, MakeDeviceProfiles("edge-server", 1, spec_.seed() + 1));
  devices.push_back(server_device[0]);
  SimulatorOptions so;
  so.seed = spec_.seed();
  so.threads = s_.threads() == 0 ? HardwareThreads() : static_cast<int>(s_.threads());
  so.network.loss = s_.loss();
  so.network.extra_latency = FromSeconds(s_.latency_ms() / 1000);
  so.network.jitter = s_.jitter();
  so.serial_work = options_.learning != nullptr && !options_.learning->concurrent;
  so.interrupt = options_.interrupt;
  sim_ = std::make_unique<Simulator>(so, std::move(devices));

  const engine::FederatedHost
      fed_host;  // SecAgg+ secrets from the run's streams; the server plays every attacker
  MURMUR_ASSIGN_OR_RETURN(federated::ServerOptions o, engine::MakeServerOptions(spec_, fed_host));
  federated::SignKeyDirectory directory;
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

  MURMUR_ASSIGN_OR_RETURN(ml::MlLearnerOptions lo, engine::LearnerOptionsOf(spec_));
  if (o.attack == federated::AttackKind::kLabelFlip) {
    flipped_ = FlipAttackerLabels(world_->data.train, *world_->partition, o.attacker);
  }
  for (NodeId i = 0; i < n; ++i) {
    auto part = world_->partition->node(i);
    const bool flip = engine::FlipsLabels(spec_, i);
    MURMUR_ASSIGN_OR_RETURN(
        auto learner,
        MakeNodeLearner(options_.learning, *world_, spec_, lo, i, flip ? flipped_.data : world_->data.train,
                        flip ? std::span<const ml::SampleIndex>(flipped_.parts[i]) : part));
    learners_.push_back(std::move(learner));
    MURMUR_ASSIGN_OR_RETURN(
        federated::ClientOptions co,
        engine::MakeClientOptions(spec_, i, static_cast<double>(part.size()), max_samples, fed_host));
    if (spec_.secure_aggregation()) {
      co.secagg.identity = &identities_[i];
      co.secagg.directory = directory;
    }
    const NodeId server = num_edges > 0 ? n + edge_of_[i] : n;
    clients_.push_back(std::make_unique<federated::FedClient>(sim_->env(i), server, *learners_[i],
                                                              world_->initial.layout(), co));
    sim_->SetSink(i, clients_.back().get());
    summary_.state_bytes += clients_.back()->state_floats() * sizeof(float);
  }
  if (num_edges > 0) {
    const bool by_rsu = spec_.edge_assignment() == "nearest-rsu";
    std::vector<NodeId> peers;
    for (NodeId e = 0; e < num_edges; ++e) {
      std::vector<NodeId> members;  // nearest-rsu: every vehicle, restricted per round by SetCluster
      for (NodeId i = 0; i < n; ++i) {
        if (by_rsu || edge_of_[i] == e) members.push_back(i);
      }
      if (members.empty())
        return Status::InvalidArgument("scenario field 'edge_aggregators': edge " + std::to_string(e) +
                                       " has no clients");
      peers.push_back(n + e);
      edges_.push_back(std::make_unique<federated::EdgeAggregator>(
          sim_->env(n + e), world_->initial.layout(), EdgeOptionsFor(o, top, std::move(members), n)));
      sim_->SetSink(n + e, edges_.back().get());
      summary_.state_bytes += edges_.back()->state_floats() * sizeof(float);
    }
    if (by_rsu) AssignToRsus();
    top_env_ = std::make_unique<RemappedEnv>(sim_->env(top), peers);
    server_ = std::make_unique<federated::FedServer>(*top_env_, world_->initial.Clone(),
                                                     TopServerOptions(o, num_edges), this);
    top_sink_ = std::make_unique<RemappedSink>(*server_, peers);
    sim_->SetSink(top, top_sink_.get());
  } else {
    server_ = std::make_unique<federated::FedServer>(sim_->env(n), world_->initial.Clone(), o, this);
    sim_->SetSink(n, server_.get());
  }
  summary_.state_bytes += server_->state_floats() * sizeof(float);
  evaluator_ = MakeEvaluator(options_.learning, *world_, 1, s_.eval_samples(), spec_.seed(), sim_->pool());
  MURMUR_ASSIGN_OR_RETURN(writer_, MetricsWriter::Open(s_.metrics_csv(), s_.metrics_json()));
  std::ostringstream d;
  d << n << " clients + " << (num_edges > 0 ? std::to_string(num_edges) + " edge aggregators + " : "")
    << "server, " << a << " (" << o.clients_per_round << " per round, aggregation " << spec_.robust() << "), "
    << spec_.model() << " (" << world_->initial.size() << " parameters), " << spec_.dataset() << " "
    << spec_.partition() << ", upload " << spec_.upload_compression();
  const std::vector<bool> attackers = engine::AttackersOf(spec_);
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
  return Status::Ok();
}

void FederatedRun::SetOnline(NodeId node, bool online) {
  if (node >= num_clients_) return;
  if (edges_.empty()) return server_->SetOnline(node, online);
  for (auto& e : edges_) e->SetOnline(node, online);
}

void FederatedRun::AssignToRsus() {
  const auto edges = static_cast<NodeId>(edges_.size());
  world_->mobility->Advance(
      std::max(world_->mobility->time(), std::chrono::duration<double>(sim_->now()).count()));
  edge_of_ = NearestRsu(*world_->mobility, num_clients_, edges);
  for (NodeId e = 0; e < edges; ++e) {
    std::vector<std::uint8_t> in(num_clients_, 0);
    std::size_t size = 0;
    for (NodeId i = 0; i < num_clients_; ++i) {
      in[i] = edge_of_[i] == e;
      size += in[i];
    }
    edges_[e]->SetCluster(std::move(in),
                          EdgeClientsPerRound(engine::ClientsPerRound(spec_), size, num_clients_));
  }
  for (NodeId i = 0; i < num_clients_; ++i) clients_[i]->set_server(num_clients_ + edge_of_[i]);
}

void FederatedRun::OnRoundDone(NodeId, std::uint64_t round, double loss) {
  if (spec_.edge_aggregators() > 0 && spec_.edge_assignment() == "nearest-rsu") AssignToRsus();
  last_loss_ = loss;
  rounds_done_ = round + 1;
  if (progress_) progress_(rounds_done_, spec_.rounds(), nullptr);
  if ((spec_.eval_every() > 0 && rounds_done_ % spec_.eval_every() == 0) || rounds_done_ == spec_.rounds())
    Evaluate(rounds_done_);
  if (rounds_done_ >= spec_.rounds()) sim_->Stop();
}

void FederatedRun::Evaluate(std::uint64_t round) {
  EvalPoint p = evaluator_->Evaluate({&server_->params()});
  StampPoint(*sim_, spec_.nodes(), round, WallSeconds(), &p);
  p.train_loss = last_loss_;
  p.epsilon = server_->epsilon();
  summary_.points.push_back(p);
  writer_->Write(p);
  if (progress_) progress_(round, spec_.rounds(), &summary_.points.back());
}

RunSummary FederatedRun::Run(FederatedStats* stats) {
  Evaluate(0);
  auto on_change = [this](NodeId node, bool online) { SetOnline(node, online); };
  StartScenarioChurn(*sim_, s_, *world_, FromSeconds(s_.time_budget() > 0 ? s_.time_budget() : 1e7),
                     on_change);
  for (NodeId i = 0; i < num_clients_; ++i) SetOnline(i, sim_->online(i));
  // The server is the last node (after the clients and the edge aggregators).
  sim_->AtNode(static_cast<NodeId>(sim_->num_nodes() - 1), Nanos(0), [this] { server_->Start(); });
  sim_->RunUntil(s_.time_budget() > 0 ? FromSeconds(s_.time_budget()) : Nanos::max());
  if (summary_.points.empty() || summary_.points.back().round != rounds_done_) Evaluate(rounds_done_);
  FinishSummary(*sim_, rounds_done_, WallSeconds(), &summary_);
  if (server_->finished()) {
    summary_.stop_reason =
        server_->stop_reason() == "all rounds done" ? "rounds done" : server_->stop_reason();
  } else if (sim_->interrupted()) {
    summary_.stop_reason = "interrupted";
  } else if (s_.time_budget() > 0 && sim_->now() >= FromSeconds(s_.time_budget())) {
    summary_.stop_reason = "time budget";
  } else {
    summary_.stop_reason = "no more events (no client could deliver a result)";
  }
  summary_.epsilon = server_->epsilon();
  summary_.contributors = server_->contributors();
  summary_.clients = num_clients_;
  summary_.points.back().stop = summary_.stop_reason;
  writer_->Finish(summary_.stop_reason);
  if (stats != nullptr) {
    stats->epsilon = server_->epsilon();
    stats->stop_reason = summary_.stop_reason;
    stats->results_accepted = server_->results_accepted();
    stats->results_dropped = server_->results_dropped();
    stats->contributors = server_->contributors();
    stats->final_model.assign(server_->params().span().begin(), server_->params().span().end());
    stats->secagg_rounds_aborted = server_->secagg_rounds_aborted();
    stats->secagg_clients_dropped = server_->secagg_clients_dropped();
    const TrafficStats& top = sim_->traffic(num_clients_ + static_cast<NodeId>(edges_.size()));
    stats->top_bytes_sent = top.bytes_sent;
    stats->top_bytes_received = top.bytes_received;
  }
  return std::move(summary_);
}

}  // namespace

Result<RunSummary> RunFederatedScenario(const proto::Scenario& s, const ProgressFn& progress) {
  return RunFederatedScenario(s, progress, nullptr);
}

Result<RunSummary> RunFederatedScenario(const proto::Scenario& s, const ProgressFn& progress,
                                        FederatedStats* stats, const RunOptions& options) {
  MURMUR_RETURN_IF_ERROR(ValidateScenario(s));
  if (!engine::IsFederatedAlgorithm(s.spec().algorithm()))
    return Status::InvalidArgument("spec field 'algorithm': '" + s.spec().algorithm() + "' is not federated");
  MURMUR_ASSIGN_OR_RETURN(std::unique_ptr<World> world, BuildWorld(s));
  MURMUR_RETURN_IF_ERROR(AdoptLearning(options.learning, s.spec(), *world));
  FederatedRun run(s, std::move(world), progress, options);
  MURMUR_RETURN_IF_ERROR(run.Build());
  return run.Run(stats);
}

}  // namespace murmur::sim
