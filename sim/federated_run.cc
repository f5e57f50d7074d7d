#include "sim/federated_run.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <sstream>

#include "core/remapped_env.h"
#include "crypto/identity.h"
#include "federated/client.h"
#include "federated/server.h"
#include "gossip/codec.h"
#include "ml/ml_learner.h"
#include "sim/churn.h"
#include "sim/evaluator.h"
#include "sim/federated_edges.h"
#include "sim/label_flip.h"
#include "sim/simulator.h"
#include "sim/world.h"

namespace murmur::sim {

namespace {

using Clock = std::chrono::steady_clock;

constexpr const char* kAlgorithms[] = {"fedavg",  "fedprox", "scaffold",   "fedavgm",
                                       "fedadam", "fedyogi", "fedadagrad", "fedbuff"};

federated::ServerOptimizerKind OptimizerOf(const std::string& a) {
  auto k = federated::ParseServerOptimizer(a);
  return k.ok() ? k.value() : federated::ServerOptimizerKind::kFedAvg;
}

class FederatedRun final : public RoundObserver {
 public:
  FederatedRun(const proto::Scenario& s, std::unique_ptr<World> world, const ProgressFn& progress)
      : s_(s), world_(std::move(world)), progress_(progress), start_(Clock::now()) {}

  Status Build();
  RunSummary Run(FederatedStats* stats);
  void OnRoundDone(NodeId node, std::uint64_t round, double loss) override;

 private:
  void Evaluate(std::uint64_t round);
  void SetOnline(NodeId node, bool online);
  void AssignToRsus();

  const proto::Scenario& s_;
  std::unique_ptr<World> world_;
  ProgressFn progress_;
  Clock::time_point start_;
  double WallSeconds() const { return std::chrono::duration<double>(Clock::now() - start_).count(); }
  std::unique_ptr<Simulator> sim_;
  std::vector<std::unique_ptr<ml::MlLearner>> learners_;
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
  const NodeId n = FederatedClientCount(s_);
  const NodeId num_edges = s_.edge_aggregators();
  num_clients_ = n;
  const std::string& a = s_.algorithm();
  std::vector<DeviceProfile> devices = world_->devices;
  devices.resize(n);
  if (num_edges > 0) {
    MURMUR_ASSIGN_OR_RETURN(auto edge_devices,
                            MakeDeviceProfiles(s_.edge_devices(), num_edges, s_.seed() + 2));
    for (auto& d : edge_devices) d.availability = 1.0;  // edge aggregators are infrastructure: no churn
    devices.insert(devices.end(), edge_devices.begin(), edge_devices.end());
    edge_of_ = s_.edge_assignment() == "nearest-rsu" ? NearestRsu(*world_->mobility, n, num_edges)
                                                     : EdgesById(n, num_edges);
  }
  const NodeId top = n + num_edges;
  MURMUR_ASSIGN_OR_RETURN(auto server_device, MakeDeviceProfiles("edge-server", 1, s_.seed() + 1));
  devices.push_back(server_device[0]);
  SimulatorOptions so;
  so.seed = s_.seed();
  so.threads = s_.threads() == 0 ? HardwareThreads() : static_cast<int>(s_.threads());
  so.network.loss = s_.loss();
  so.network.extra_latency = FromSeconds(s_.latency_ms() / 1000);
  so.network.jitter = s_.jitter();
  sim_ = std::make_unique<Simulator>(so, std::move(devices));

  federated::ServerOptions o;
  o.num_clients = n;
  o.rounds = s_.rounds();
  o.clients_per_round = std::min<std::size_t>(s_.clients_per_round(), n);
  o.over_commit = s_.over_commit();
  o.deadline = FromSeconds(s_.deadline());
  o.partial_work = s_.partial_work();
  o.fednova = s_.fednova();
  o.scaffold = a == "scaffold";
  o.async = a == "fedbuff";
  o.concurrency = s_.fedbuff_concurrency();
  o.buffer = s_.fedbuff_buffer();
  MURMUR_ASSIGN_OR_RETURN(o.selection.kind, federated::ParseSelection(s_.selection()));
  o.optimizer.kind = OptimizerOf(a);
  o.optimizer.lr = s_.server_lr() > 0 ? s_.server_lr() : federated::DefaultServerLr(o.optimizer.kind);
  o.optimizer.momentum = s_.server_momentum();
  o.optimizer.beta1 = s_.server_beta1();
  o.optimizer.beta2 = s_.server_beta2();
  o.optimizer.tau = s_.server_tau();
  MURMUR_ASSIGN_OR_RETURN(o.robust, federated::ParseRobustRule(s_.robust()));
  MURMUR_ASSIGN_OR_RETURN(o.attack, federated::ParseAttack(s_.attack()));
  o.attack_scale = s_.attack_scale();
  const auto attackers = static_cast<std::size_t>(std::llround(s_.attack_fraction() * n));
  if (attackers > 0 && o.attack != federated::AttackKind::kNone) {
    std::vector<NodeId> ids(n);
    for (NodeId i = 0; i < n; ++i) ids[i] = i;
    Rng rng(s_.seed(), n, RngPurpose::kAttack);
    rng.Shuffle(std::span<NodeId>(ids));
    o.attacker.assign(n, false);
    for (std::size_t i = 0; i < attackers; ++i) o.attacker[ids[i]] = true;
  }
  const double expected_bad = s_.attack_fraction() * static_cast<double>(o.clients_per_round);
  o.robust.krum_f = s_.krum_f() > 0 ? s_.krum_f() : std::max<std::size_t>(1, std::llround(expected_bad));
  o.dp_clip = s_.dp_clip();
  o.dp_noise = s_.dp_noise();
  o.dp_client_side = s_.dp_side() == "client";
  o.dp_adaptive = s_.dp_adaptive();
  o.adaptive.count_stddev = static_cast<double>(o.clients_per_round) / 20;  // Andrew et al.'s sigma_b
  o.epsilon_budget = s_.epsilon_budget();
  o.dp_delta = s_.dp_delta();
  if (s_.broadcast_compression() != "none") {
    MURMUR_ASSIGN_OR_RETURN(auto codec, gossip::CodecSpec::Parse(s_.broadcast_compression()));
    o.broadcast = codec.compressor;
  }
  std::shared_ptr<const compression::Compressor> upload;
  if (s_.upload_compression() != "none") {
    auto made = compression::MakeCompressor(s_.upload_compression());
    if (!made.ok()) return made.status().WithContext("scenario field 'upload_compression'");
    upload = std::move(made).value();
  }
  // Lossless both ways and no DP: clients return models, and FedAvg is exact.
  o.request_model = !upload && !o.broadcast && o.dp_clip == 0;
  federated::SecAggParams secagg;
  secagg.neighbours = s_.secagg_neighbours();
  secagg.threshold = s_.secagg_threshold();
  secagg.quantizer.bits = static_cast<int>(s_.secagg_bits());
  secagg.quantizer.range = s_.secagg_range();
  federated::SignKeyDirectory directory;
  double max_samples = 1;
  if (s_.secure_aggregation()) {
    identities_.reserve(n);
    for (NodeId i = 0; i < n; ++i) {
      std::array<std::uint8_t, crypto::kSignSeedSize> seed{};
      Rng rng(s_.seed(), i, RngPurpose::kSecureAggregation);
      for (auto& b : seed) b = static_cast<std::uint8_t>(rng.NextU32());
      identities_.push_back(crypto::Identity::FromSeed(seed));
      max_samples = std::max(max_samples, static_cast<double>(world_->partition->node(i).size()));
    }
    directory = [this](NodeId id) -> const crypto::SignPublicKey* {
      return id < identities_.size() ? &identities_[id].public_key() : nullptr;
    };
    o.secure_aggregation = true;
    o.secagg.params = secagg;
    o.secagg.directory = directory;
    o.secagg.deterministic_seed = true;
    o.secagg.key_timeout = FromSeconds(s_.secagg_timeout());
    o.secagg.input_timeout = FromSeconds(s_.deadline() > 0 ? s_.deadline() : 600);
  }

  ml::MlLearnerOptions lo;
  lo.batch = static_cast<int>(s_.batch());
  lo.lr = s_.lr();
  lo.momentum = s_.momentum();
  lo.weight_decay = s_.weight_decay();
  if (o.attack == federated::AttackKind::kLabelFlip) {
    flipped_ = FlipAttackerLabels(world_->data.train, *world_->partition, o.attacker);
  }
  for (NodeId i = 0; i < n; ++i) {
    auto part = world_->partition->node(i);
    const bool flip = !o.attacker.empty() && o.attacker[i] && o.attack == federated::AttackKind::kLabelFlip;
    learners_.push_back(
        std::make_unique<ml::MlLearner>(*world_->model, flip ? flipped_.data : world_->data.train,
                                        flip ? std::span<const ml::SampleIndex>(flipped_.parts[i]) : part, lo,
                                        Rng(s_.seed(), i, RngPurpose::kBatch)));
    federated::ClientOptions co;
    co.local_steps = s_.local_epochs() > 0 ? 0 : static_cast<int>(s_.local_steps());
    co.local_epochs = s_.local_epochs();
    co.batch = lo.batch;
    co.num_samples = static_cast<double>(part.size());
    co.prox_mu = a == "fedprox" ? s_.prox_mu() : 0.0;
    co.scaffold = o.scaffold;
    co.upload = upload;
    if (o.dp_client_side && o.dp_clip > 0) {
      co.dp_clip = o.dp_clip;
      co.dp_noise_stddev = o.dp_noise * o.dp_clip / std::sqrt(static_cast<double>(o.clients_per_round));
    }
    if (s_.secure_aggregation()) {
      co.secagg.params = secagg;
      co.secagg.identity = &identities_[i];
      co.secagg.directory = directory;
      co.secagg.deterministic_secrets = true;
      co.secagg_weight_scale = max_samples;
      co.secagg_dropout = s_.secagg_dropout();
    }
    const NodeId server = num_edges > 0 ? n + edge_of_[i] : n;
    clients_.push_back(std::make_unique<federated::FedClient>(sim_->env(i), server, *learners_[i],
                                                              world_->initial.layout(), co));
    sim_->SetSink(i, clients_.back().get());
    summary_.state_bytes += clients_.back()->state_floats() * sizeof(float);
  }
  if (num_edges > 0) {
    const bool by_rsu = s_.edge_assignment() == "nearest-rsu";
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
  evaluator_ = std::make_unique<Evaluator>(*world_->model, world_->data.test, 1, s_.eval_samples(), s_.seed(),
                                           sim_->pool());
  MURMUR_ASSIGN_OR_RETURN(writer_, MetricsWriter::Open(s_.metrics_csv(), s_.metrics_json()));
  std::ostringstream d;
  d << n << " clients + " << (num_edges > 0 ? std::to_string(num_edges) + " edge aggregators + " : "")
    << "server, " << a << " (" << o.clients_per_round << " per round, aggregation " << s_.robust() << "), "
    << s_.model() << " (" << world_->initial.size() << " parameters), " << s_.dataset() << " "
    << s_.partition() << ", upload " << s_.upload_compression();
  if (s_.secure_aggregation()) {
    d << ", SecAgg+ (k " << s_.secagg_neighbours() << ", " << s_.secagg_bits() << " bits, R "
      << s_.secagg_range() << ")";
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
    edges_[e]->SetCluster(std::move(in), EdgeClientsPerRound(s_.clients_per_round(), size, num_clients_));
  }
  for (NodeId i = 0; i < num_clients_; ++i) clients_[i]->set_server(num_clients_ + edge_of_[i]);
}

void FederatedRun::OnRoundDone(NodeId, std::uint64_t round, double loss) {
  if (s_.edge_aggregators() > 0 && s_.edge_assignment() == "nearest-rsu") AssignToRsus();
  last_loss_ = loss;
  rounds_done_ = round + 1;
  if (progress_) progress_(rounds_done_, s_.rounds(), nullptr);
  if (rounds_done_ % s_.eval_every() == 0 || rounds_done_ == s_.rounds()) Evaluate(rounds_done_);
  if (rounds_done_ >= s_.rounds()) sim_->Stop();
}

void FederatedRun::Evaluate(std::uint64_t round) {
  EvalPoint p = evaluator_->Evaluate({&server_->params()});
  StampPoint(*sim_, s_.nodes(), round, WallSeconds(), &p);
  p.train_loss = last_loss_;
  summary_.points.push_back(p);
  writer_->Write(p);
  if (progress_) progress_(round, s_.rounds(), &summary_.points.back());
}

RunSummary FederatedRun::Run(FederatedStats* stats) {
  Evaluate(0);
  auto on_change = [this](NodeId node, bool online) { SetOnline(node, online); };
  StartScenarioChurn(*sim_, s_, *world_, FromSeconds(s_.time_budget() > 0 ? s_.time_budget() : 1e7),
                     on_change);
  for (NodeId i = 0; i < num_clients_; ++i) SetOnline(i, sim_->online(i));
  sim_->At(Nanos(0), [this] { server_->Start(); });
  sim_->RunUntil(s_.time_budget() > 0 ? FromSeconds(s_.time_budget()) : Nanos::max());
  if (summary_.points.empty() || summary_.points.back().round != rounds_done_) Evaluate(rounds_done_);
  FinishSummary(*sim_, rounds_done_, WallSeconds(), &summary_);
  if (stats != nullptr) {
    stats->epsilon = server_->epsilon();
    stats->stop_reason = server_->finished() ? server_->stop_reason() : "time budget or no more events";
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

bool IsFederatedAlgorithm(const std::string& algorithm) {
  return std::any_of(std::begin(kAlgorithms), std::end(kAlgorithms),
                     [&](const char* a) { return algorithm == a; });
}

Status ValidateFederatedScenario(const proto::Scenario& s) {
  auto bad = [](const std::string& field, const std::string& why) {
    return Status::InvalidArgument("scenario field '" + field + "' " + why);
  };
  if (!IsFederatedAlgorithm(s.algorithm())) {
    return bad("algorithm", "'" + s.algorithm() +
                                "' is not one of fedavg, fedprox, scaffold, fedavgm, fedadam, fedyogi, "
                                "fedadagrad, fedbuff");
  }
  if (s.nodes() < 1 || s.nodes() > 1'000'000) return bad("nodes", "must be in [1, 1000000] clients");
  if (s.clients_per_round() < 1) return bad("clients_per_round", "must be at least 1");
  if (s.local_epochs() < 0 || s.local_epochs() > 1000) return bad("local_epochs", "must be in [0, 1000]");
  if (s.local_steps() < 1) return bad("local_steps", "must be at least 1");
  if (s.prox_mu() < 0) return bad("prox_mu", "must be >= 0");
  if (s.server_lr() < 0 || !std::isfinite(s.server_lr())) return bad("server_lr", "must be >= 0");
  if (s.server_momentum() < 0 || s.server_momentum() >= 1) return bad("server_momentum", "must be in [0, 1)");
  if (s.server_beta1() < 0 || s.server_beta1() >= 1) return bad("server_beta1", "must be in [0, 1)");
  if (s.server_beta2() < 0 || s.server_beta2() >= 1) return bad("server_beta2", "must be in [0, 1)");
  if (!(s.server_tau() > 0)) return bad("server_tau", "must be > 0");
  auto robust = federated::ParseRobustRule(s.robust());
  if (!robust.ok()) return robust.status().WithContext("scenario field 'robust'");
  auto attack = federated::ParseAttack(s.attack());
  if (!attack.ok()) return attack.status().WithContext("scenario field 'attack'");
  if (s.attack_fraction() < 0 || s.attack_fraction() >= 1) return bad("attack_fraction", "must be in [0, 1)");
  if (s.dp_clip() < 0) return bad("dp_clip", "must be >= 0");
  if (s.dp_noise() < 0) return bad("dp_noise", "must be >= 0");
  if (s.dp_side() != "server" && s.dp_side() != "client") return bad("dp_side", "must be server or client");
  if (s.dp_noise() > 0 && s.dp_clip() == 0) return bad("dp_noise", "needs dp_clip > 0");
  if (s.dp_clip() > 0 &&
      (robust.value().rule != federated::AggregationRule::kMean || s.algorithm() == "fedbuff")) {
    return bad("dp_clip", "DP-FedAvg works with robust = mean and synchronous rounds");
  }
  if (s.epsilon_budget() < 0) return bad("epsilon_budget", "must be >= 0");
  if (!(s.dp_delta() > 0 && s.dp_delta() < 1)) return bad("dp_delta", "must be in (0, 1)");
  if (s.deadline() < 0) return bad("deadline", "must be >= 0 seconds");
  MURMUR_RETURN_IF_ERROR(ValidateEdgeFields(s));
  if (s.over_commit() < 1 || s.over_commit() > 10) return bad("over_commit", "must be in [1, 10]");
  if (s.partial_work() && s.deadline() == 0) return bad("partial_work", "needs a deadline");
  auto sel = federated::ParseSelection(s.selection());
  if (!sel.ok()) return sel.status().WithContext("scenario field 'selection'");
  if (s.upload_compression() != "none") {
    auto c = compression::MakeCompressor(s.upload_compression());
    if (!c.ok()) return c.status().WithContext("scenario field 'upload_compression'");
  }
  if (s.broadcast_compression() != "none") {
    auto c = gossip::CodecSpec::Parse(s.broadcast_compression());
    if (!c.ok()) return c.status().WithContext("scenario field 'broadcast_compression'");
    if (!c.value().full_model_safe) return bad("broadcast_compression", "must be none, fp16, bf16 or int8");
  }
  if (s.secure_aggregation()) {
    const std::string& a = s.algorithm();
    if (a == "scaffold" || a == "fedbuff")
      return bad("secure_aggregation", "works with synchronous FedAvg-family rounds, not " + a);
    if (robust.value().rule != federated::AggregationRule::kMean)
      return bad("secure_aggregation", "needs robust = mean (the server sees only the sum)");
    if (s.dp_clip() > 0) return bad("secure_aggregation", "does not combine with DP-FedAvg here");
    if (s.fednova()) return bad("secure_aggregation", "does not combine with fednova");
    if (s.upload_compression() != "none") return bad("secure_aggregation", "needs upload_compression = none");
    if (s.attack() != "none") return bad("secure_aggregation", "needs attack = none");
    if (s.edge_aggregators() > 0)
      return bad("secure_aggregation", "runs between clients and one server, not through edge aggregators");
    if (s.clients_per_round() < 3)
      return bad("clients_per_round", "must be at least 3 with secure_aggregation");
    if (s.secagg_neighbours() % 2 != 0) return bad("secagg_neighbours", "must be even (or 0 for all)");
    if (!(s.secagg_threshold() >= 0 && s.secagg_threshold() <= 1))
      return bad("secagg_threshold", "must be in [0, 1]");
    if (!(s.secagg_dropout() >= 0 && s.secagg_dropout() < 1))
      return bad("secagg_dropout", "must be in [0, 1)");
    if (!(s.secagg_timeout() > 0) || !std::isfinite(s.secagg_timeout()))
      return bad("secagg_timeout", "must be > 0 seconds");
    federated::QuantizerOptions q;
    q.bits = static_cast<int>(std::min<std::uint32_t>(s.secagg_bits(), 64));
    q.range = s.secagg_range();
    const auto max_clients = static_cast<std::size_t>(std::ceil(s.over_commit() * s.clients_per_round()));
    auto st = federated::SecAggQuantizer::Check(q, max_clients);
    if (!st.ok()) return st.WithContext("scenario fields 'secagg_bits', 'secagg_range'");
  }
  if (s.rounds() < 1) return bad("rounds", "must be at least 1");
  if (s.eval_every() < 1) return bad("eval_every", "must be at least 1");
  if (s.batch() < 1 || s.batch() > 65536) return bad("batch", "must be in [1, 65536]");
  if (!(s.lr() > 0) || !std::isfinite(s.lr())) return bad("lr", "must be a positive number");
  return Status::Ok();
}

Result<RunSummary> RunFederatedScenario(const proto::Scenario& s, const ProgressFn& progress) {
  return RunFederatedScenario(s, progress, nullptr);
}

Result<RunSummary> RunFederatedScenario(const proto::Scenario& s, const ProgressFn& progress,
                                        FederatedStats* stats) {
  MURMUR_RETURN_IF_ERROR(ValidateFederatedScenario(s));
  MURMUR_ASSIGN_OR_RETURN(std::unique_ptr<World> world, BuildWorld(s));
  FederatedRun run(s, std::move(world), progress);
  MURMUR_RETURN_IF_ERROR(run.Build());
  return run.Run(stats);
}

}  // namespace murmur::sim
