#include "node/federated_job.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <mutex>

#include "compression/compressor.h"
#include "core/log.h"
#include "federated/client.h"
#include "federated/server.h"
#include "ml/dataset_spec.h"
#include "ml/ml_learner.h"
#include "ml/model_spec.h"
#include "ml/partition.h"
#include "node/checkpoint.h"
#include "node/federated_control.h"
#include "node/job_env.h"

namespace murmur::node {

namespace {

constexpr const char* kAlgorithms[] = {"fedavg",  "fedprox", "scaffold",   "fedavgm",
                                       "fedadam", "fedyogi", "fedadagrad", "fedbuff"};
constexpr Nanos kJoinInterval = std::chrono::seconds(1);

Nanos Seconds(double s) { return Nanos(static_cast<std::int64_t>(s * 1e9)); }

// "dirichlet:ALPHA" -> ALPHA (> 0), or an error naming the field.
Result<double> DirichletAlpha(const std::string& p) {
  const std::string prefix = "dirichlet:";
  double alpha = 0;
  if (p.rfind(prefix, 0) == 0) {
    try {
      std::size_t used = 0;
      const std::string text = p.substr(prefix.size());
      alpha = std::stod(text, &used);
      if (used != text.size()) alpha = 0;
    } catch (const std::exception&) {
    }
  }
  if (!(alpha > 0) || !std::isfinite(alpha))
    return Status::InvalidArgument("job field 'partition': '" + p +
                                   "' is not iid or dirichlet:ALPHA (ALPHA > 0)");
  return alpha;
}

// The engine's ids: clients 0 .. clients-1, the server `clients` (module comment).
struct IdMap {
  NodeId aggregator = 0, clients = 0;
  NodeId ToNode(NodeId index) const {
    return index == clients ? aggregator : (index < aggregator ? index : index + 1);
  }
  NodeId ToIndex(NodeId node) const {
    return node == aggregator ? clients : (node < aggregator ? node : node - 1);
  }
};

// The Env the federated engine runs on: a JobEnv seen through IdMap, so that
// its ids and random streams (seed, index, purpose) are the simulator's.
class IndexEnv final : public Env {
 public:
  IndexEnv(JobEnv& target, IdMap map, std::uint64_t seed) : target_(target), map_(map), seed_(seed) {}
  NodeId self() const override { return map_.ToIndex(target_.self()); }
  Nanos Now() const override { return target_.Now(); }
  TimerId StartTimer(Nanos delay, std::function<void()> fn) override {
    return target_.StartTimer(delay, std::move(fn));
  }
  void CancelTimer(TimerId id) override { target_.CancelTimer(id); }
  void Send(NodeId to, MessagePtr msg) override { target_.Send(map_.ToNode(to), std::move(msg)); }
  Rng MakeRng(RngPurpose purpose) const override { return Rng(seed_, self(), purpose); }
  void Offload(double flops, std::function<void()> work, std::function<void()> done) override {
    target_.Offload(flops, std::move(work), std::move(done));
  }

 private:
  JobEnv& target_;
  IdMap map_;
  std::uint64_t seed_;
};

}  // namespace

bool IsFederatedJob(const std::string& algorithm) {
  return std::any_of(std::begin(kAlgorithms), std::end(kAlgorithms),
                     [&](const char* a) { return algorithm == a; });
}

Status ValidateFederatedJob(const proto::JobConfig& j, NodeId self) {
  (void)self;
  auto bad = [](const std::string& field, const std::string& why) {
    return Status::InvalidArgument("job field '" + field + "' " + why);
  };
  if (!IsFederatedJob(j.algorithm()))
    return bad("algorithm", "'" + j.algorithm() +
                                "' is not one of fedavg, fedprox, scaffold, fedavgm, fedadam, fedyogi, "
                                "fedadagrad, fedbuff");
  if (j.aggregator() >= j.nodes())
    return bad("aggregator",
               std::to_string(j.aggregator()) + " is not below job.nodes " + std::to_string(j.nodes()));
  const std::uint32_t clients = j.nodes() - 1;
  if (j.partition() != "iid") MURMUR_RETURN_IF_ERROR(DirichletAlpha(j.partition()).status());
  if (j.clients_per_round() > clients)
    return bad("clients_per_round", std::to_string(j.clients_per_round()) + " is more than the " +
                                        std::to_string(clients) + " clients (0: all)");
  if (j.min_clients() < 1 || j.min_clients() > clients)
    return bad("min_clients", "must be in [1, " + std::to_string(clients) + "]");
  if (j.rounds() < 1) return bad("rounds", "must be at least 1");
  if (j.checkpoint_every() < 1) return bad("checkpoint_every", "must be at least 1");
  if (j.batch() < 1 || j.batch() > 65536) return bad("batch", "must be in [1, 65536]");
  if (!(j.lr() > 0) || !std::isfinite(j.lr())) return bad("lr", "must be a positive number");
  if (!(j.local_epochs() >= 0 && j.local_epochs() <= 1000))
    return bad("local_epochs", "must be in [0, 1000]");
  if (j.local_steps() < 1) return bad("local_steps", "must be at least 1");
  if (!(j.prox_mu() >= 0)) return bad("prox_mu", "must be >= 0");
  if (!(j.server_lr() >= 0) || !std::isfinite(j.server_lr())) return bad("server_lr", "must be >= 0");
  if (!(j.server_momentum() >= 0 && j.server_momentum() < 1))
    return bad("server_momentum", "must be in [0, 1)");
  if (!(j.server_beta1() >= 0 && j.server_beta1() < 1)) return bad("server_beta1", "must be in [0, 1)");
  if (!(j.server_beta2() >= 0 && j.server_beta2() < 1)) return bad("server_beta2", "must be in [0, 1)");
  if (!(j.server_tau() > 0)) return bad("server_tau", "must be > 0");
  if (!(j.momentum() >= 0 && j.momentum() < 1)) return bad("momentum", "must be in [0, 1)");
  if (!(j.weight_decay() >= 0)) return bad("weight_decay", "must be >= 0");
  if (!(j.deadline() >= 0 && j.deadline() <= 86400)) return bad("deadline", "must be in [0, 86400] seconds");
  if (!(j.over_commit() >= 1 && j.over_commit() <= 10)) return bad("over_commit", "must be in [1, 10]");
  if (!(j.join_timeout() > 0 && j.join_timeout() <= 86400))
    return bad("join_timeout", "must be in (0, 86400] seconds");
  auto sel = federated::ParseSelection(j.selection());
  if (!sel.ok()) return sel.status().WithContext("job field 'selection'");
  if (j.upload_compression() != "none") {
    auto c = compression::MakeCompressor(j.upload_compression());
    if (!c.ok()) return c.status().WithContext("job field 'upload_compression'");
  }
  return Status::Ok();
}

class FederatedJobImpl final : public MessageSink, public gossip::RoundObserver {
 public:
  FederatedJobImpl(proto::JobConfig job, Env& env, std::string checkpoint_path, Job::OnEnd on_end)
      : job_(std::move(job)),
        map_{job_.aggregator(), job_.nodes() - 1},
        env_(env, job_.seed()),
        index_env_(env_, map_, job_.seed()),
        checkpoint_path_(std::move(checkpoint_path)),
        on_end_(std::move(on_end)) {}

  Status Init();
  Status InitServer(ParamVector x0);
  Status InitClient();
  void Start();
  void OnMessage(NodeId from, MessagePtr msg) override;
  void OnRoundDone(NodeId, std::uint64_t round, double loss) override;
  void OnTask(const federated::FedMessage& task);
  void Join();
  void StartServer();
  void Evaluate(const ParamVector& x);
  void WriteCheckpoint();
  void End(Job::End how);

  bool is_server() const { return env_.self() == job_.aggregator(); }

  proto::JobConfig job_;
  IdMap map_;
  JobEnv env_;
  IndexEnv index_env_;
  std::string checkpoint_path_;
  Job::OnEnd on_end_;
  ml::TrainTest data_;
  std::unique_ptr<ml::Model> model_;
  std::unique_ptr<ml::ModelWorkspace> eval_ws_;
  // Aggregator:
  std::unique_ptr<federated::FedServer> server_;
  std::vector<bool> joined_;
  std::size_t joined_count_ = 0;
  bool server_started_ = false;
  // Client:
  std::unique_ptr<ml::Partition> partition_;
  std::unique_ptr<ml::MlLearner> learner_;
  std::unique_ptr<federated::FedClient> client_;
  std::shared_ptr<const compression::Compressor> upload_;

  std::uint64_t start_round_ = 0;
  std::atomic<std::uint64_t> rounds_done_{0};
  std::atomic<double> accuracy_{-1};
  std::atomic<double> loss_{0};
  std::atomic<std::uint64_t> checkpoints_{0};
  std::atomic<bool> ended_{false};
  mutable std::mutex mu_;
  std::vector<float> last_params_;  // guarded by mu_: the (last received) global model
  bool draining_ = false;
};

Status FederatedJobImpl::Init() {
  MURMUR_RETURN_IF_ERROR(ValidateFederatedJob(job_, env_.self()));
  auto data = ml::LoadDatasetSpec(job_.dataset(), job_.dataset_dir(), job_.seed());
  if (!data.ok()) return data.status().WithContext("job field 'dataset'");
  data_ = std::move(data).value();
  auto model = ml::MakeModel(job_.model(), data_.train.dim, data_.train.num_classes);
  if (!model.ok()) return model.status().WithContext("job field 'model'");
  model_ = std::move(model).value();
  eval_ws_ = model_->NewWorkspace();
  if (job_.upload_compression() != "none") {
    auto made = compression::MakeCompressor(job_.upload_compression());
    if (!made.ok()) return made.status().WithContext("job field 'upload_compression'");
    upload_ = std::move(made).value();
  }
  ParamVector x0(model_->layout());
  Rng init(job_.seed(), 0, RngPurpose::kInit);
  model_->InitParams(x0, init);
  last_params_.assign(x0.span().begin(), x0.span().end());
  return is_server() ? InitServer(std::move(x0)) : InitClient();
}

Status FederatedJobImpl::InitServer(ParamVector x0) {
  auto ckpt = LoadCheckpoint(checkpoint_path_, x0.size());
  if (ckpt.ok()) {
    start_round_ = std::min(ckpt->round, job_.rounds());
    std::copy(ckpt->params.begin(), ckpt->params.end(), x0.data());
    last_params_ = ckpt->params;
    MURMUR_LOG(kInfo) << "node " << env_.self() << ": federated job " << job_.job_id()
                      << " resumes after round " << start_round_;
  } else if (ckpt.status().code() != StatusCode::kNotFound) {
    return ckpt.status();
  }
  rounds_done_ = start_round_;
  const std::string& a = job_.algorithm();
  const NodeId n = map_.clients;
  federated::ServerOptions o;  // as sim/federated_run.cc builds it
  o.num_clients = n;
  o.rounds = job_.rounds() - start_round_;
  o.clients_per_round = job_.clients_per_round() == 0 ? n : job_.clients_per_round();
  o.over_commit = job_.over_commit();
  o.deadline = Seconds(job_.deadline());
  o.min_results = job_.min_clients();
  o.scaffold = a == "scaffold";
  o.async = a == "fedbuff";
  o.concurrency = job_.fedbuff_concurrency();
  o.buffer = job_.fedbuff_buffer();
  MURMUR_ASSIGN_OR_RETURN(o.selection.kind, federated::ParseSelection(job_.selection()));
  auto kind = federated::ParseServerOptimizer(a);
  o.optimizer.kind = kind.ok() ? kind.value() : federated::ServerOptimizerKind::kFedAvg;
  o.optimizer.lr = job_.server_lr() > 0 ? job_.server_lr() : federated::DefaultServerLr(o.optimizer.kind);
  o.optimizer.momentum = job_.server_momentum();
  o.optimizer.beta1 = job_.server_beta1();
  o.optimizer.beta2 = job_.server_beta2();
  o.optimizer.tau = job_.server_tau();
  o.request_model = upload_ == nullptr;  // lossless uploads: clients return models, FedAvg is exact
  server_ = std::make_unique<federated::FedServer>(index_env_, std::move(x0), o, this);
  joined_.assign(n, false);
  return Status::Ok();
}

Status FederatedJobImpl::InitClient() {
  const NodeId n = map_.clients;
  const NodeId c = map_.ToIndex(env_.self());
  const auto samples = static_cast<std::size_t>(data_.train.num_samples);
  Rng part_rng(job_.seed(), 0, RngPurpose::kPartition);  // as sim/world.cc
  if (job_.partition() == "iid") {
    partition_ = std::make_unique<ml::Partition>(ml::PartitionIid(samples, n, part_rng));
  } else {
    ml::DirichletOptions d;
    MURMUR_ASSIGN_OR_RETURN(d.alpha, DirichletAlpha(job_.partition()));
    d.min_per_node = std::min<std::size_t>(10, samples / n);
    auto made = ml::PartitionDirichlet(data_.train, n, d, part_rng);
    if (!made.ok()) return made.status().WithContext("job field 'partition'");
    partition_ = std::make_unique<ml::Partition>(std::move(made).value());
  }
  ml::MlLearnerOptions lo;
  lo.batch = static_cast<int>(job_.batch());
  lo.lr = job_.lr();
  lo.momentum = job_.momentum();
  lo.weight_decay = job_.weight_decay();
  const auto part = partition_->node(c);
  learner_ = std::make_unique<ml::MlLearner>(*model_, data_.train, part, lo,
                                             Rng(job_.seed(), c, RngPurpose::kBatch));
  federated::ClientOptions co;
  co.local_steps = job_.local_epochs() > 0 ? 0 : static_cast<int>(job_.local_steps());
  co.local_epochs = job_.local_epochs();
  co.batch = lo.batch;
  co.num_samples = static_cast<double>(part.size());
  co.prox_mu = job_.algorithm() == "fedprox" ? job_.prox_mu() : 0.0;
  co.scaffold = job_.algorithm() == "scaffold";
  co.upload = upload_;
  client_ = std::make_unique<federated::FedClient>(index_env_, n, *learner_, model_->layout(), co);
  return Status::Ok();
}

void FederatedJobImpl::Start() {
  if (is_server()) {
    if (start_round_ >= job_.rounds()) {
      for (NodeId c = 0; c < map_.clients; ++c)
        env_.Send(map_.ToNode(c),
                  std::make_shared<const FedControlMessage>(FedControlMessage::What::kDone, start_round_));
      return End(Job::End::kCompleted);
    }
    env_.StartTimer(Seconds(job_.join_timeout()), [this] { StartServer(); });
    return;
  }
  Join();
}

void FederatedJobImpl::Join() {
  env_.Send(job_.aggregator(), std::make_shared<const FedControlMessage>(FedControlMessage::What::kJoin, 0));
  env_.StartTimer(kJoinInterval, [this] { Join(); });
}

void FederatedJobImpl::StartServer() {
  if (server_started_ || ended_) return;
  server_started_ = true;
  for (NodeId c = 0; c < map_.clients; ++c) server_->SetOnline(c, joined_[c]);
  MURMUR_LOG(kInfo) << "node " << env_.self() << ": federated job " << job_.job_id() << " starts with "
                    << joined_count_ << " of " << map_.clients << " clients";
  server_->Start();
}

void FederatedJobImpl::OnMessage(NodeId from, MessagePtr msg) {
  if (ended_ || from >= job_.nodes() || from == env_.self()) return;
  const NodeId index = map_.ToIndex(from);
  if (msg->kind() == kFedControlMessageKind) {
    const auto& m = static_cast<const FedControlMessage&>(*msg);
    if (is_server() && m.what() == FedControlMessage::What::kJoin && !joined_[index]) {
      joined_[index] = true;
      ++joined_count_;
      if (server_started_) server_->SetOnline(index, true);
      if (joined_count_ == map_.clients) StartServer();
    } else if (!is_server() && m.what() == FedControlMessage::What::kDone) {
      rounds_done_ = std::max<std::uint64_t>(rounds_done_, m.round());
      End(Job::End::kCompleted);
    }
    return;
  }
  if (msg->kind() != federated::kFedMessageKind) return;
  if (is_server()) return server_->OnMessage(index, std::move(msg));
  if (from != job_.aggregator()) return;  // tasks come from the aggregator only
  const auto& m = static_cast<const federated::FedMessage&>(*msg);
  if (m.header().kind == federated::FedKind::kTask) OnTask(m);
  client_->OnMessage(index, std::move(msg));
}

void FederatedJobImpl::OnTask(const federated::FedMessage& task) {
  ParamVector x(model_->layout());
  if (task.updates()[0]->size() != x.size() || !task.updates()[0]->AddTo(x.span()).ok()) return;
  const std::uint64_t round = task.header().round;
  {
    std::lock_guard<std::mutex> lock(mu_);
    last_params_.assign(x.span().begin(), x.span().end());
  }
  rounds_done_ = round;
  if (job_.eval_every() > 0 && round % job_.eval_every() == 0) Evaluate(x);
}

void FederatedJobImpl::Evaluate(const ParamVector& x) {
  accuracy_ = model_->Evaluate(x, data_.test, *eval_ws_).accuracy;
}

void FederatedJobImpl::OnRoundDone(NodeId, std::uint64_t round, double loss) {
  const std::uint64_t done = start_round_ + round + 1;
  {
    std::lock_guard<std::mutex> lock(mu_);
    const auto p = server_->params().span();
    last_params_.assign(p.begin(), p.end());
  }
  rounds_done_ = done;
  loss_ = loss;
  if (job_.eval_every() > 0 && (done % job_.eval_every() == 0 || done == job_.rounds())) {
    Evaluate(server_->params());
    MURMUR_LOG(kInfo) << "node " << env_.self() << ": federated job " << job_.job_id() << " round " << done
                      << "/" << job_.rounds() << " train loss " << loss << " test accuracy "
                      << accuracy_.load();
  }
  if (done % job_.checkpoint_every() == 0 || done >= job_.rounds() || draining_) WriteCheckpoint();
  if (done >= job_.rounds()) {
    for (NodeId c = 0; c < map_.clients; ++c)
      env_.Send(map_.ToNode(c),
                std::make_shared<const FedControlMessage>(FedControlMessage::What::kDone, done));
    End(Job::End::kCompleted);
  } else if (draining_) {
    End(Job::End::kDrained);
  }
}

void FederatedJobImpl::WriteCheckpoint() {
  if (!is_server()) return;
  Checkpoint c;
  {
    std::lock_guard<std::mutex> lock(mu_);
    c.params = last_params_;
  }
  c.round = rounds_done_;
  Status st = SaveCheckpoint(checkpoint_path_, c);
  if (!st.ok()) {
    MURMUR_LOG(kError) << "checkpoint: " << st.ToString();
    return;
  }
  ++checkpoints_;
}

void FederatedJobImpl::End(Job::End how) {
  if (ended_) return;
  ended_ = true;
  env_.Halt();
  if (on_end_) on_end_(how);
}

FederatedJob::FederatedJob(std::unique_ptr<FederatedJobImpl> impl) : impl_(std::move(impl)) {}
FederatedJob::~FederatedJob() = default;

Result<std::unique_ptr<Job>> FederatedJob::Create(const proto::JobConfig& job, Env& env,
                                                  std::string checkpoint_path, OnEnd on_end) {
  auto impl = std::make_unique<FederatedJobImpl>(job, env, std::move(checkpoint_path), std::move(on_end));
  MURMUR_RETURN_IF_ERROR(impl->Init());
  return std::unique_ptr<Job>(new FederatedJob(std::move(impl)));
}

MessageSink* FederatedJob::sink() { return impl_.get(); }

std::vector<NodeId> FederatedJob::neighbours() const {
  if (!impl_->is_server()) return {impl_->job_.aggregator()};
  std::vector<NodeId> out;
  for (NodeId c = 0; c < impl_->map_.clients; ++c) out.push_back(impl_->map_.ToNode(c));
  return out;
}

void FederatedJob::Start() { impl_->Start(); }

void FederatedJob::Drain() {
  // The aggregator ends after its current round; a client (stateless) at once.
  if (impl_->is_server() && impl_->server_started_) {
    impl_->draining_ = true;
    return;
  }
  impl_->env_.StartTimer(Nanos(0), [impl = impl_.get()] {
    impl->WriteCheckpoint();
    impl->End(End::kDrained);
  });
}

void FederatedJob::Abandon() {
  if (impl_->ended_) return;
  impl_->WriteCheckpoint();
  impl_->End(End::kAbandoned);
}

const proto::JobConfig& FederatedJob::config() const { return impl_->job_; }
bool FederatedJob::ended() const { return impl_->ended_; }
std::uint64_t FederatedJob::rounds_done() const { return impl_->rounds_done_; }
double FederatedJob::accuracy() const { return impl_->accuracy_; }
double FederatedJob::loss() const { return impl_->loss_; }
std::uint64_t FederatedJob::checkpoints() const { return impl_->checkpoints_; }
std::vector<float> FederatedJob::params() const {
  std::lock_guard<std::mutex> lock(impl_->mu_);
  return impl_->last_params_;
}

}  // namespace murmur::node
