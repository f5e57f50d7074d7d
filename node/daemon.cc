#include "node/daemon.h"

#include <csignal>
#include <sstream>

#include "core/log.h"
#include "crypto/certificate.h"
#include "crypto/file_io.h"
#include "crypto/identity.h"
#include "gossip/decentralized_sgd.h"
#include "ml/dataset_spec.h"
#include "ml/ml_learner.h"
#include "ml/model_spec.h"
#include "ml/partition.h"
#include "node/asio_env.h"
#include "node/checkpoint.h"
#include "node/config.h"
#include "node/metrics_server.h"
#include "node/transport.h"
#include "topology/factory.h"

namespace murmur::node {

namespace {
Nanos Seconds(double s) { return Nanos(static_cast<std::int64_t>(s * 1e9)); }

Result<crypto::SignPublicKey> CoordinatorKey(const std::string& text) {
  if (text.size() == 64 && text.find_first_not_of("0123456789abcdefABCDEF") == std::string::npos)
    return crypto::ParsePublicKeyText(text);
  return crypto::LoadPublicKeyFile(text);
}
}  // namespace

class DaemonImpl final : public gossip::RoundObserver {
 public:
  explicit DaemonImpl(proto::NodeConfig config) : config_(std::move(config)), signals_(io_) {}
  ~DaemonImpl() override {
    if (transport_) transport_->Stop();
    if (metrics_) metrics_->Stop();
    io_.stop();
    env_.reset();  // joins the worker pool before the node goes
    node_.reset();
    transport_.reset();
  }

  Status Init();
  Status Run(bool handle_signals);
  void RequestStop() {
    asio::post(io_, [this] { BeginDrain("stop requested"); });
  }
  void OnRoundDone(NodeId, std::uint64_t round, double loss) override;

  proto::NodeConfig config_;
  asio::io_context io_;
  asio::signal_set signals_;
  ml::TrainTest data_;
  std::unique_ptr<ml::Model> model_;
  std::unique_ptr<ml::Partition> partition_;
  std::unique_ptr<ml::MlLearner> learner_;
  std::unique_ptr<gossip::RoundTopology> topology_;
  std::unique_ptr<AsioEnv> env_;
  std::unique_ptr<Transport> transport_;
  std::unique_ptr<MetricsServer> metrics_;
  std::unique_ptr<gossip::DecentralizedSgdNode> node_;
  std::unique_ptr<ml::ModelWorkspace> eval_ws_;
  asio::steady_timer drain_timer_{io_};
  std::uint64_t start_round_ = 0;
  std::uint64_t total_rounds_ = 0;
  std::atomic<std::uint64_t> rounds_done_{0};
  std::atomic<double> accuracy_{-1};
  std::atomic<double> loss_{0};
  std::atomic<std::uint64_t> checkpoints_{0};
  mutable std::mutex mu_;
  std::vector<float> last_params_;  // guarded by mu_: the model after round rounds_done_
  bool draining_ = false;
  bool done_ = false;

 private:
  std::string CheckpointPath() const { return config_.data_dir() + "/" + kCheckpointFile; }
  void WriteCheckpoint();
  void BeginDrain(const std::string& why);
  void Finish(Nanos linger);
  std::string RenderMetrics() const;
};

Status DaemonImpl::Init() {
  MURMUR_RETURN_IF_ERROR(ValidateNodeConfig(config_));
  LogLevel level;
  if (!ParseLogLevel(config_.log_level(), &level))
    return Status::InvalidArgument("config field 'log_level': '" + config_.log_level() + "' is unknown");
  SetLogLevel(level);
  const NodeId self = config_.node_id();
  const proto::JobConfig& job = config_.job();

  // Keys and admission.
  const std::string key_path =
      config_.has_identity() ? config_.identity() : config_.data_dir() + "/identity.key";
  const std::string cert_path =
      config_.has_certificate() ? config_.certificate() : config_.data_dir() + "/node.cert";
  MURMUR_ASSIGN_OR_RETURN(crypto::Identity identity, crypto::Identity::LoadKeyFile(key_path));
  MURMUR_ASSIGN_OR_RETURN(crypto::Certificate cert, crypto::LoadCertificateFile(cert_path));
  MURMUR_ASSIGN_OR_RETURN(crypto::SignPublicKey coordinator, CoordinatorKey(config_.coordinator_key()));
  MURMUR_RETURN_IF_ERROR(
      crypto::ValidateNetworkId(config_.network_id()).WithContext("config field 'network_id'"));
  auto creds = crypto::Credentials::Make(identity, cert);
  if (!creds.ok()) return creds.status().WithContext("certificate '" + cert_path + "'");

  // Data, model, shard, learner.
  auto data = ml::LoadDatasetSpec(job.dataset(), job.dataset_dir(), job.seed());
  if (!data.ok()) return data.status().WithContext("config field 'job.dataset'");
  data_ = std::move(data).value();
  auto model = ml::MakeModel(job.model(), data_.train.dim, data_.train.num_classes);
  if (!model.ok()) return model.status().WithContext("config field 'job.model'");
  model_ = std::move(model).value();
  Rng part_rng(job.seed(), 0, RngPurpose::kPartition);
  partition_ = std::make_unique<ml::Partition>(
      ml::PartitionIid(static_cast<std::size_t>(data_.train.num_samples), job.nodes(), part_rng));
  ml::MlLearnerOptions learner_options;
  learner_options.batch = static_cast<int>(job.batch());
  learner_options.lr = job.lr();
  learner_ = std::make_unique<ml::MlLearner>(*model_, data_.train, partition_->node(self), learner_options,
                                             Rng(job.seed(), self, RngPurpose::kBatch));
  eval_ws_ = model_->NewWorkspace();

  // Topology: the same spec as the simulator's (static kinds).
  topology::TopologySpec spec;
  spec.kind = job.topology();
  spec.nodes = job.nodes();
  spec.seed = job.seed();
  auto schedule = topology::MakeSchedule(spec);
  if (!schedule.ok()) return schedule.status().WithContext("config field 'job.topology'");
  if ((*schedule)->period() != 1)
    return Status::InvalidArgument("config field 'job.topology': murmurd runs static topologies only");
  topology_ = std::make_unique<gossip::RoundTopology>((*schedule)->At(0));
  auto codec_spec = gossip::CodecSpec::Parse(job.compression());
  if (!codec_spec.ok()) return codec_spec.status().WithContext("config field 'job.compression'");
  if (!codec_spec->full_model_safe)
    return Status::InvalidArgument(
        "config field 'job.compression': murmurd runs full-model codecs (none, fp16, bf16, int8)");

  // Initial model, or the checkpoint.
  ParamVector x0(model_->layout());
  Rng init(job.seed(), 0, RngPurpose::kInit);
  model_->InitParams(x0, init);
  auto ckpt = LoadCheckpoint(CheckpointPath(), x0.size());
  if (ckpt.ok()) {
    start_round_ = std::min(ckpt->round, job.rounds());
    std::copy(ckpt->params.begin(), ckpt->params.end(), x0.data());
    MURMUR_LOG(kInfo) << "node " << self << ": resuming from checkpoint after round " << start_round_;
  } else if (ckpt.status().code() != StatusCode::kNotFound) {
    return ckpt.status();
  }
  total_rounds_ = job.rounds();
  rounds_done_ = start_round_;
  last_params_.assign(x0.span().begin(), x0.span().end());

  // Transport, Env, metrics.
  TransportOptions to;
  to.self = self;
  MURMUR_ASSIGN_OR_RETURN(HostPort listen, ParseHostPort(config_.listen()));
  to.listen_host = listen.host;
  to.listen_port = listen.port;
  to.seed = job.seed();
  for (const auto& p : config_.peers()) {
    MURMUR_ASSIGN_OR_RETURN(HostPort hp, ParseHostPort(p.address()));
    PeerAddress pa{p.id(), hp.host, hp.port, std::nullopt};
    if (p.has_public_key()) {
      MURMUR_ASSIGN_OR_RETURN(pa.key, crypto::ParsePublicKeyText(p.public_key()));
    }
    to.peers.push_back(pa);
  }
  crypto::TrustPolicy policy{config_.network_id(), coordinator, crypto::kRoleNode};
  env_ = std::make_unique<AsioEnv>(io_, self, job.seed(), static_cast<int>(std::max(1u, config_.threads())));
  transport_ = std::make_unique<Transport>(
      io_, std::move(creds).value(), policy, to,
      [this](NodeId from, ReceivedMessage m) { env_->OnTransportMessage(from, std::move(m)); });
  env_->SetTransport(transport_.get());
  MURMUR_RETURN_IF_ERROR(transport_->Start());
  metrics_ = std::make_unique<MetricsServer>(io_, [this] { return RenderMetrics(); });
  MURMUR_ASSIGN_OR_RETURN(HostPort mhp, ParseHostPort(config_.metrics_listen()));
  MURMUR_RETURN_IF_ERROR(metrics_->Start(mhp.host, mhp.port));
  std::ostringstream ports;
  ports << "transport " << transport_->port() << "\nmetrics " << metrics_->port() << "\n";
  MURMUR_RETURN_IF_ERROR(
      crypto::WriteFileAtomic(config_.data_dir() + "/ports", crypto::AsBytes(ports.str()), 0644));

  gossip::DecentralizedSgdOptions o;
  o.order = job.algorithm() == "dpsgd-cta" ? gossip::MixOrder::kCombineThenAdapt
                                           : gossip::MixOrder::kAdaptThenCombine;
  o.rounds = total_rounds_ - start_round_;
  o.local_steps = static_cast<int>(job.local_steps());
  o.round_timeout = Seconds(job.round_timeout());
  auto codec = std::make_unique<gossip::Codec>(*codec_spec, self, model_->layout(),
                                               Rng(job.seed(), self, RngPurpose::kCompression));
  node_ = std::make_unique<gossip::DecentralizedSgdNode>(*env_, *topology_, *learner_, std::move(x0),
                                                         std::move(codec), o, this);
  env_->SetSink(node_.get());
  return Status::Ok();
}

Status DaemonImpl::Run(bool handle_signals) {
  if (handle_signals) {
    signals_.add(SIGTERM);
    signals_.add(SIGINT);
    signals_.async_wait([this](const asio::error_code& ec, int sig) {
      if (!ec) BeginDrain(sig == SIGTERM ? "SIGTERM" : "SIGINT");
    });
  }
  MURMUR_LOG(kInfo) << "node " << config_.node_id() << ": listening on port " << transport_->port()
                    << ", metrics on " << metrics_->port() << ", rounds " << start_round_ << ".."
                    << total_rounds_;
  if (start_round_ >= total_rounds_) {
    Finish(Nanos(0));
  } else {
    asio::post(io_, [this] { node_->Start(); });
  }
  io_.run();
  return Status::Ok();
}

void DaemonImpl::OnRoundDone(NodeId, std::uint64_t round, double loss) {
  const std::uint64_t done = start_round_ + round + 1;
  {
    std::lock_guard<std::mutex> lock(mu_);
    const auto p = node_->params().span();
    last_params_.assign(p.begin(), p.end());
  }
  rounds_done_ = done;
  loss_ = loss;
  const proto::JobConfig& job = config_.job();
  if (job.eval_every() > 0 && (done % job.eval_every() == 0 || done == total_rounds_)) {
    accuracy_ = model_->Evaluate(node_->params(), data_.test, *eval_ws_).accuracy;
    MURMUR_LOG(kInfo) << "node " << config_.node_id() << ": round " << done << "/" << total_rounds_
                      << " loss " << loss << " test accuracy " << accuracy_.load();
  }
  if (done % job.checkpoint_every() == 0 || done == total_rounds_ || draining_) WriteCheckpoint();
  if (done == total_rounds_) {
    Finish(Seconds(config_.linger()));
  } else if (draining_) {
    Finish(Nanos(0));
  }
}

void DaemonImpl::WriteCheckpoint() {
  Checkpoint c;
  {
    std::lock_guard<std::mutex> lock(mu_);
    c.params = last_params_;
  }
  c.round = rounds_done_;
  Status st = SaveCheckpoint(CheckpointPath(), c);
  if (!st.ok()) {
    MURMUR_LOG(kError) << "checkpoint: " << st.ToString();
    return;
  }
  ++checkpoints_;
}

void DaemonImpl::BeginDrain(const std::string& why) {
  if (draining_ || done_) return;
  draining_ = true;
  MURMUR_LOG(kInfo) << "node " << config_.node_id() << ": " << why << ", draining after round "
                    << rounds_done_.load();
  drain_timer_.expires_after(Seconds(config_.drain_timeout()));
  drain_timer_.async_wait([this](const asio::error_code& ec) {
    if (ec || done_) return;
    MURMUR_LOG(kInfo) << "node " << config_.node_id() << ": abandoning the round in progress";
    WriteCheckpoint();
    Finish(Nanos(0));
  });
}

// Keeps serving peers for `linger` (they may still need this node's last
// messages), then closes everything so that io_.run() returns.
void DaemonImpl::Finish(Nanos linger) {
  if (done_) return;
  done_ = true;
  drain_timer_.cancel();
  auto timer = std::make_shared<asio::steady_timer>(io_);
  timer->expires_after(linger);
  timer->async_wait([this, timer](const asio::error_code&) {
    transport_->Stop();
    metrics_->Stop();
    asio::error_code ignored;
    signals_.cancel(ignored);
    io_.stop();
  });
}

std::string DaemonImpl::RenderMetrics() const {
  const TransportStats& s = transport_->stats();
  std::string out;
  out += PrometheusMetric("murmur_rounds_completed", "counter",
                          "Gossip rounds completed, including before a resume.",
                          static_cast<double>(rounds_done_.load()));
  out += PrometheusMetric("murmur_bytes_sent_total", "counter", "Bytes written to peer connections.",
                          static_cast<double>(s.bytes_sent.load()));
  out += PrometheusMetric("murmur_bytes_received_total", "counter", "Bytes read from peer connections.",
                          static_cast<double>(s.bytes_received.load()));
  out += PrometheusMetric("murmur_peers_connected", "gauge", "Peers with an authenticated session.",
                          static_cast<double>(s.peers_connected.load()));
  out +=
      PrometheusMetric("murmur_handshake_failures_total", "counter", "Handshakes that failed or timed out.",
                       static_cast<double>(s.handshake_failures.load()));
  out += PrometheusMetric("murmur_frames_rejected_total", "counter",
                          "Frames refused: bad length, failed authentication or malformed record.",
                          static_cast<double>(s.frames_rejected.load()));
  out += PrometheusMetric("murmur_send_queue_drops_total", "counter",
                          "Messages dropped by the bounded send queues.",
                          static_cast<double>(s.send_queue_drops.load()));
  out +=
      PrometheusMetric("murmur_messages_undecodable_total", "counter",
                       "Received payloads that failed to decode.", static_cast<double>(env_->undecodable()));
  out +=
      PrometheusMetric("murmur_train_loss", "gauge", "Mean training loss of the last round.", loss_.load());
  out += PrometheusMetric("murmur_test_accuracy", "gauge",
                          "Test accuracy at the last evaluation (-1: none yet).", accuracy_.load());
  out += PrometheusMetric("murmur_checkpoints_written_total", "counter", "Checkpoints written.",
                          static_cast<double>(checkpoints_.load()));
  return out;
}

Daemon::Daemon(std::unique_ptr<DaemonImpl> impl) : impl_(std::move(impl)) {}
Daemon::~Daemon() = default;

Result<std::unique_ptr<Daemon>> Daemon::Create(const proto::NodeConfig& config) {
  auto impl = std::make_unique<DaemonImpl>(config);
  MURMUR_RETURN_IF_ERROR(impl->Init());
  return std::unique_ptr<Daemon>(new Daemon(std::move(impl)));
}

Status Daemon::Run(bool handle_signals) { return impl_->Run(handle_signals); }
void Daemon::RequestStop() { impl_->RequestStop(); }
std::uint16_t Daemon::port() const { return impl_->transport_->port(); }
std::uint16_t Daemon::metrics_port() const { return impl_->metrics_->port(); }
std::uint64_t Daemon::rounds_done() const { return impl_->rounds_done_; }
double Daemon::last_accuracy() const { return impl_->accuracy_; }
std::vector<float> Daemon::params() const {
  std::lock_guard<std::mutex> lock(impl_->mu_);
  return impl_->last_params_;
}

}  // namespace murmur::node
