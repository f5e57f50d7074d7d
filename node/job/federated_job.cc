#include "node/job/federated_job.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <map>
#include <mutex>
#include <optional>

#include "core/log.h"
#include "engine/federated_builder.h"
#include "engine/node_kit.h"
#include "federated/client.h"
#include "federated/secagg_messages.h"
#include "federated/server.h"
#include "ml/ml_learner.h"
#include "node/job/checkpoint.h"
#include "node/job/federated_control.h"
#include "node/job/federated_state.h"
#include "node/job/index_env.h"
#include "node/job/job_data.h"
#include "node/job/job_env.h"
#include "node/job/job_store.h"

namespace murmur::node {

namespace {

constexpr Nanos kJoinInterval = std::chrono::seconds(1);

// Daemons draw SecAgg+ secrets from the system's randomness, their
// sign-flip and gaussian attackers send their poisoned updates themselves,
// and membership tells who is alive (silent clients are left out).
constexpr engine::FederatedHost kDaemonHost{true, true, true};

}  // namespace

class FederatedJobImpl final : public MessageSink, public RoundObserver {
 public:
  FederatedJobImpl(const PlannedJob& job, Env& env, std::string checkpoint_path, Job::OnEnd on_end,
                   std::function<bool(NodeId)> peer_alive, LocalData local, JobKeys keys)
      : job_(job.config()),
        spec_(job_.spec()),
        plan_(job.plan()),
        peer_alive_(std::move(peer_alive)),
        local_(std::move(local)),
        map_{job_.aggregator(), spec_.nodes()},
        env_(env, spec_.seed(), JobTag(job_)),
        index_env_(env_, map_, spec_.seed()),
        checkpoint_path_(std::move(checkpoint_path)),
        on_end_(std::move(on_end)),
        keys_(std::move(keys)) {}

  Status Init();
  Status InitServer(ParamVector x0);
  Status Resume(const Checkpoint& ckpt);
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
  void PeersChanged();
  // SecAgg+ keys, and a run the server cuts short.
  federated::SignKeyDirectory Directory();
  bool PeersKeyed() const;
  void CheckServer();
  void Warn(std::string what);

  bool is_server() const { return env_.self() == job_.aggregator(); }

  proto::JobConfig job_;
  const proto::JobSpec& spec_;              // job_.spec()
  const engine::JobPlan plan_;              // of job_
  std::function<bool(NodeId)> peer_alive_;  // the daemon's membership view (may be empty)
  LocalData local_;
  IdMap map_;
  JobEnv env_;
  IndexEnv index_env_;
  std::string checkpoint_path_;
  Job::OnEnd on_end_;
  JobKeys keys_;
  std::map<NodeId, crypto::SignPublicKey> key_cache_;  // Directory's answers, by engine index
  ml::TrainTest data_;
  std::unique_ptr<ml::Model> model_;
  std::unique_ptr<ml::ModelWorkspace> eval_ws_;
  // Aggregator:
  std::unique_ptr<federated::FedServer> server_;
  std::vector<bool> joined_;
  std::size_t joined_count_ = 0;
  bool server_started_ = false;
  Nanos join_until_{0};               // SecAgg+ client: joins without every session after this
  std::uint64_t secagg_aborted_ = 0;  // aborted SecAgg+ rounds already reported
  // Client:
  std::vector<ml::SampleIndex> samples_;  // this client's: all of data_.train
  std::unique_ptr<ml::MlLearner> learner_;
  std::unique_ptr<federated::FedClient> client_;

  std::uint64_t start_round_ = 0;
  std::atomic<std::uint64_t> rounds_done_{0};
  std::atomic<double> accuracy_{-1};
  std::atomic<double> loss_{std::numeric_limits<double>::quiet_NaN()};  // NaN: no round yet
  std::atomic<double> epsilon_{0};
  std::atomic<std::uint64_t> checkpoints_{0};
  std::atomic<bool> ended_{false};
  mutable std::mutex mu_;
  std::vector<float> last_params_;  // guarded by mu_: the (last received) global model
  std::string warning_;             // guarded by mu_: Job::warning
  bool draining_ = false;
};

Status FederatedJobImpl::Init() {
  // The aggregator keeps only the test set; a client its own samples too.
  MURMUR_ASSIGN_OR_RETURN(
      JobData loaded,
      LoadJobData(job_, local_, map_.clients, is_server() ? 0 : map_.ToIndex(env_.self()), !is_server()));
  data_ = std::move(loaded.data);
  samples_ = std::move(loaded.samples);
  model_ = std::move(loaded.model);
  eval_ws_ = model_->NewWorkspace();
  ParamVector x0 = engine::InitialModel(plan_, *model_);
  last_params_.assign(x0.span().begin(), x0.span().end());
  return is_server() ? InitServer(std::move(x0)) : InitClient();
}

Status FederatedJobImpl::InitServer(ParamVector x0) {
  auto ckpt = LoadCheckpoint(checkpoint_path_, x0.size());
  if (ckpt.ok())
    MURMUR_RETURN_IF_ERROR(CheckCheckpointOwner(*ckpt, checkpoint_path_, job_.job_id(), OwnerTag(job_)));
  if (ckpt.ok()) {
    std::copy(ckpt->params.begin(), ckpt->params.end(), x0.data());
    last_params_ = ckpt->params;
  } else if (ckpt.status().code() != StatusCode::kNotFound) {
    return ckpt.status();
  }
  federated::ServerOptions o = engine::MakeServerOptions(plan_, kDaemonHost);
  if (peer_alive_) o.available = [this](NodeId c) { return peer_alive_(map_.ToNode(c)); };
  if (spec_.dp_clip() > 0) index_env_.MakeSecret(RngPurpose::kPrivacy);  // DP noise from real randomness
  if (spec_.secure_aggregation()) o.secagg.directory = Directory();
  // The bound on a result's weight: the spec's, or the largest share of the
  // job's partition (the clients' sample counts when they train on it).
  if (spec_.max_weight() > 0) {
    o.max_weight = spec_.max_weight();
  } else {
    MURMUR_ASSIGN_OR_RETURN(std::size_t largest, LargestShard(job_, map_.clients));
    o.max_weight = static_cast<double>(largest);
  }
  server_ = engine::MakeFedServer(index_env_, std::move(x0), o, this);
  joined_.assign(map_.clients, false);
  if (ckpt.ok()) MURMUR_RETURN_IF_ERROR(Resume(*ckpt));
  epsilon_ = server_->epsilon();
  rounds_done_ = start_round_;
  return Status::Ok();
}

// The server goes on from its checkpointed state: the round count, the
// optimizer, the accountant, the clip norm, selection (federated/server.h,
// "Resuming"). Without that state (a checkpoint of an older murmurd) the job
// does not resume: a fresh accountant would let it spend its privacy budget again.
Status FederatedJobImpl::Resume(const Checkpoint& ckpt) {
  auto state = GetServerState(ckpt);
  if (!state.ok())
    return Status::FailedPrecondition("checkpoint '" + checkpoint_path_ + "' of federated job " +
                                      job_.job_id() +
                                      " holds the model but not the server's state (optimizer, privacy "
                                      "accountant, clip, selection; murmurd before checkpoint version 3): "
                                      "remove the file to restart the job from round 0");
  Status st = server_->ImportState(*state);
  if (!st.ok()) return st.WithContext("checkpoint '" + checkpoint_path_ + "'");
  start_round_ = std::min(server_->rounds_done(), spec_.rounds());
  if (ckpt.round != server_->rounds_done())
    return Status::InvalidArgument("checkpoint '" + checkpoint_path_ + "': round " +
                                   std::to_string(ckpt.round) + " but server state of round " +
                                   std::to_string(server_->rounds_done()));
  MURMUR_LOG(kInfo) << "node " << env_.self() << ": federated job " << job_.job_id()
                    << " resumes after round " << start_round_;
  return Status::Ok();
}

Status FederatedJobImpl::InitClient() {
  const NodeId n = map_.clients;
  const NodeId c = map_.ToIndex(env_.self());
  if (engine::FlipsLabels(plan_, c)) {
    // Data poisoning (Fang et al., USENIX Security 2020), as sim/adversary/label_flip.h: y -> C - 1 - y.
    for (auto& y : data_.train.labels) y = data_.train.num_classes - 1 - y;
  }
  const std::span<const ml::SampleIndex> part = samples_;
  learner_ = engine::MakeLearner(plan_, *model_, data_.train, part, c);
  // n_max: a public bound on every client's n_i, alike at every client: the
  // largest share of the job's partition. Local data has no such bound.
  double max_samples = 1;
  if (spec_.secure_aggregation()) {
    if (keys_.identity == nullptr || !keys_.peer_key)
      return Status::FailedPrecondition("spec field 'secure_aggregation': this daemon has no identity key");
    if (!local_.data.empty())
      return Status::FailedPrecondition(
          "spec field 'secure_aggregation': needs the job's partition (a public bound on every client's "
          "sample count); this daemon's config field 'data' gives it local data");
    MURMUR_ASSIGN_OR_RETURN(std::size_t largest, LargestShard(job_, n));
    max_samples = static_cast<double>(largest);
  }
  federated::ClientOptions co =
      engine::MakeClientOptions(plan_, c, static_cast<double>(part.size()), max_samples, kDaemonHost);
  // Client-side DP noise is drawn from the client's kCompression stream (federated/client.cc).
  if (co.dp_clip > 0 && co.dp_noise_stddev > 0) index_env_.MakeSecret(RngPurpose::kCompression);
  if (spec_.secure_aggregation()) {
    co.secagg.identity = keys_.identity;
    co.secagg.directory = Directory();
  }
  client_ = engine::MakeFedClient(index_env_, n, *learner_, model_->layout(), co);
  return Status::Ok();
}

void FederatedJobImpl::Start() {
  if (is_server()) {
    if (start_round_ >= spec_.rounds()) {
      for (NodeId c = 0; c < map_.clients; ++c)
        env_.Send(map_.ToNode(c),
                  std::make_shared<const FedControlMessage>(FedControlMessage::What::kDone, start_round_));
      return End(Job::End::kCompleted);
    }
    env_.StartTimer(FromSeconds(job_.join_timeout()), [this] { StartServer(); });
    return;
  }
  join_until_ = env_.Now() + FromSeconds(job_.join_timeout());
  Join();
}

void FederatedJobImpl::Join() {
  // SecAgg+: wait (up to join_timeout) until every other daemon of the job has a
  // session, so that the neighbours' signed keys can be checked when they come.
  if (spec_.secure_aggregation() && !PeersKeyed() && env_.Now() < join_until_) {
    env_.StartTimer(kJoinInterval / 10, [this] { Join(); });
    return;
  }
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
  CheckServer();
}

void FederatedJobImpl::OnMessage(NodeId from, MessagePtr msg) {
  if (ended_ || from >= DaemonsOf(job_) || from == env_.self()) return;
  const NodeId index = map_.ToIndex(from);
  if (msg->kind() == kFedControlMessageKind) {
    const auto& m = static_cast<const FedControlMessage&>(*msg);
    if (is_server() && m.what() == FedControlMessage::What::kJoin && !joined_[index]) {
      joined_[index] = true;
      ++joined_count_;
      if (server_started_) server_->SetOnline(index, true);
      if (joined_count_ == map_.clients) StartServer();
    } else if (!is_server() && m.what() == FedControlMessage::What::kDone) {
      // The job's end is the aggregator's to say (docs/protocol.md).
      if (from != job_.aggregator()) return env_.Refuse(from, Refusal::kNotAggregator);
      rounds_done_ = std::max<std::uint64_t>(rounds_done_, m.round());
      End(Job::End::kCompleted);
    }
    return;
  }
  if (msg->kind() != federated::kFedMessageKind && msg->kind() != federated::kSecAggMessageKind) return;
  if (is_server()) return server_->OnMessage(index, std::move(msg));
  // Tasks and SecAgg+ requests come from the aggregator only.
  if (from != job_.aggregator()) return env_.Refuse(from, Refusal::kNotAggregator);
  if (msg->kind() == federated::kFedMessageKind) {
    const auto& m = static_cast<const federated::FedMessage&>(*msg);
    if (m.header().kind == federated::FedKind::kTask) OnTask(m);
  }
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
  if (spec_.eval_every() > 0 && round % spec_.eval_every() == 0) Evaluate(x);
}

federated::SignKeyDirectory FederatedJobImpl::Directory() {
  // Engine index -> the key of the certificate that daemon presented on its session
  // (as membership checks signatures, node/daemon_impl.h); only clients sign keys.
  return [this](NodeId index) -> const crypto::SignPublicKey* {
    if (index >= map_.clients) return nullptr;
    const NodeId node = map_.ToNode(index);
    if (node == env_.self()) return &keys_.identity->public_key();
    auto key = keys_.peer_key ? keys_.peer_key(node) : std::nullopt;
    if (!key) return nullptr;
    return &(key_cache_[index] = *key);
  };
}

bool FederatedJobImpl::PeersKeyed() const {
  for (NodeId node = 0; node < DaemonsOf(job_); ++node)
    if (node != env_.self() && !(keys_.peer_key && keys_.peer_key(node))) return false;
  return true;
}

void FederatedJobImpl::CheckServer() {
  if (ended_ || !server_ || !server_->finished() || rounds_done_ >= spec_.rounds()) return;
  Warn("ended after " + std::to_string(rounds_done_.load()) + " of " + std::to_string(spec_.rounds()) +
       " rounds: " + server_->stop_reason());
  for (NodeId c = 0; c < map_.clients; ++c)
    env_.Send(map_.ToNode(c),
              std::make_shared<const FedControlMessage>(FedControlMessage::What::kDone, rounds_done_));
  WriteCheckpoint();
  End(Job::End::kCompleted);
}

void FederatedJobImpl::Warn(std::string what) {
  MURMUR_LOG(kWarning) << "node " << env_.self() << ": federated job " << job_.job_id() << ": " << what;
  std::lock_guard<std::mutex> lock(mu_);
  warning_ = std::move(what);
}

void FederatedJobImpl::Evaluate(const ParamVector& x) {
  accuracy_ = model_->Evaluate(x, data_.test, *eval_ws_).accuracy;
}

void FederatedJobImpl::OnRoundDone(NodeId, std::uint64_t round, double loss) {
  const std::uint64_t done = round + 1;  // the server counts from round 0, also after a resume
  {
    std::lock_guard<std::mutex> lock(mu_);
    const auto p = server_->params().span();
    last_params_.assign(p.begin(), p.end());
  }
  epsilon_ = server_->epsilon();  // charged for rounds 0 .. round (the next one is charged when it starts)
  rounds_done_ = done;
  loss_ = loss;
  if ((spec_.eval_every() > 0 && done % spec_.eval_every() == 0) || done == spec_.rounds()) {
    Evaluate(server_->params());
    MURMUR_LOG(kInfo) << "node " << env_.self() << ": federated job " << job_.job_id() << " round " << done
                      << "/" << spec_.rounds() << " train loss " << loss << " test accuracy "
                      << accuracy_.load();
  }
  for (const auto& [client, rounds] : server_->left_out_silent()) {
    Warn("round " + std::to_string(done) + ": client node " + std::to_string(map_.ToNode(client)) +
         " sent nothing for " + std::to_string(federated::kSilentTasks) +
         " or more tasks in a row while counted alive; left out of selection for the next " +
         std::to_string(rounds) + " rounds (docs/security.md, Insiders)");
  }
  if (!server_->secagg_last_complaints().empty()) {
    std::string who;
    for (const auto& [complainer, accused] : server_->secagg_last_complaints())
      who += (who.empty() ? "node " : ", node ") + std::to_string(map_.ToNode(accused)) + " by node " +
             std::to_string(map_.ToNode(complainer));
    Warn("round " + std::to_string(done) + ": SecAgg+ shares that did not open; left out of the round: " +
         who + " (docs/security.md, Insiders)");
  }
  if (server_->secagg_rounds_aborted() > secagg_aborted_) {
    secagg_aborted_ = server_->secagg_rounds_aborted();
    Warn("round " + std::to_string(done) + ": SecAgg+ aborted, model unchanged (" +
         std::to_string(secagg_aborted_) +
         " rounds aborted so far): " + server_->secagg_last_status().ToString());
  }
  if (done % job_.checkpoint_every() == 0 || done >= spec_.rounds() || draining_) WriteCheckpoint();
  if (done >= spec_.rounds()) {
    for (NodeId c = 0; c < map_.clients; ++c)
      env_.Send(map_.ToNode(c),
                std::make_shared<const FedControlMessage>(FedControlMessage::What::kDone, done));
    End(Job::End::kCompleted);
  } else if (draining_) {
    End(Job::End::kDrained);
  } else {
    // The server may decide not to run the next round (privacy budget spent).
    env_.StartTimer(Nanos(0), [this] { CheckServer(); });
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
  c.job_id = job_.job_id();
  c.job_tag = OwnerTag(job_);
  // The server's state as of its last update (between rounds). Abandon() may
  // come mid-round: the open round is then already charged to the accountant,
  // which errs on the side of privacy, and is run again after a resume.
  if (server_) PutServerState(server_->ExportState(), &c);
  Status st = SaveCheckpoint(checkpoint_path_, c);
  if (!st.ok()) {
    MURMUR_LOG(kError) << "checkpoint: " << st.ToString();
    return;
  }
  ++checkpoints_;
}

// Membership changed: a client it declares dead is offline (its pending task
// is given up, so the round does not wait for the deadline) until it is alive again.
void FederatedJobImpl::PeersChanged() {
  if (!is_server() || !server_started_ || ended_ || !peer_alive_) return;
  for (NodeId c = 0; c < map_.clients; ++c) server_->SetOnline(c, joined_[c] && peer_alive_(map_.ToNode(c)));
}

void FederatedJobImpl::End(Job::End how) {
  if (ended_) return;
  ended_ = true;
  env_.Halt();
  if (on_end_) on_end_(how);
}

FederatedJob::FederatedJob(std::unique_ptr<FederatedJobImpl> impl) : impl_(std::move(impl)) {}
FederatedJob::~FederatedJob() = default;

Result<std::unique_ptr<Job>> FederatedJob::Create(const PlannedJob& job, Env& env,
                                                  std::string checkpoint_path, OnEnd on_end,
                                                  std::function<bool(NodeId)> peer_alive,
                                                  const LocalData& local, JobKeys keys) {
  auto impl = std::make_unique<FederatedJobImpl>(job, env, std::move(checkpoint_path), std::move(on_end),
                                                 std::move(peer_alive), local, std::move(keys));
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

void FederatedJob::PeersChanged() { impl_->PeersChanged(); }

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
double FederatedJob::epsilon() const { return impl_->epsilon_; }
double FederatedJob::accuracy() const { return impl_->accuracy_; }
double FederatedJob::loss() const {
  return impl_->client_ ? impl_->client_->last_loss() : impl_->loss_.load();
}
std::uint64_t FederatedJob::checkpoints() const { return impl_->checkpoints_; }
std::string FederatedJob::role() const { return impl_->is_server() ? "aggregator" : "client"; }
std::vector<NodeId> FederatedJob::waiting_for() const {
  std::vector<NodeId> out;
  if (!impl_->server_ || impl_->ended_) return out;
  for (NodeId c : impl_->server_->WaitingFor()) out.push_back(impl_->map_.ToNode(c));
  std::sort(out.begin(), out.end());
  return out;
}
std::string FederatedJob::warning() const {
  std::lock_guard<std::mutex> lock(impl_->mu_);
  return impl_->warning_;
}
std::vector<float> FederatedJob::params() const {
  std::lock_guard<std::mutex> lock(impl_->mu_);
  return impl_->last_params_;
}

}  // namespace murmur::node
