#include "node/daemon.h"

#include <csignal>
#include <cstdio>
#include <map>
#include <sstream>

#include <google/protobuf/text_format.h>

#include "core/log.h"
#include "crypto/certificate.h"
#include "crypto/file_io.h"
#include "crypto/identity.h"
#include "gossip/membership.h"
#include "gossip/membership_signer.h"
#include "node/asio_env.h"
#include "node/checkpoint.h"
#include "node/config.h"
#include "node/control_server.h"
#include "node/job.h"
#include "node/metrics_server.h"
#include "node/transport.h"

namespace murmur::node {

namespace {
Nanos Seconds(double s) { return Nanos(static_cast<std::int64_t>(s * 1e9)); }

Result<crypto::SignPublicKey> CoordinatorKey(const std::string& text) {
  if (text.size() == 64 && text.find_first_not_of("0123456789abcdefABCDEF") == std::string::npos)
    return crypto::ParsePublicKeyText(text);
  return crypto::LoadPublicKeyFile(text);
}

constexpr const char* kJobFile = "job.conf";
constexpr const char* kJobStateFile = "job.state";

// Verifies a membership message's signature with the key of the certificate
// its sender presented on the session the message arrived on.
class SessionKeys final : public gossip::MembershipVerifier {
 public:
  explicit SessionKeys(const Transport* transport) : transport_(transport) {}
  bool Verify(NodeId sender, std::span<const std::uint8_t> signed_bytes,
              const crypto::Signature& signature) const override {
    const auto key = transport_->PeerKey(sender);
    return key.has_value() && crypto::VerifySignature(*key, signed_bytes, signature);
  }

 private:
  const Transport* transport_;
};

const char* StateName(gossip::MemberState s) {
  switch (s) {
    case gossip::MemberState::kAlive: return "alive";
    case gossip::MemberState::kSuspect: return "suspect";
    case gossip::MemberState::kDead: return "dead";
    case gossip::MemberState::kLeft: return "left";
  }
  return "?";
}

proto::ControlResponse Refuse(std::string why) {
  proto::ControlResponse r;
  r.set_ok(false);
  r.set_error(std::move(why));
  return r;
}
}  // namespace

class DaemonImpl final : public MessageSink, public gossip::MembershipObserver {
 public:
  explicit DaemonImpl(proto::NodeConfig config) : config_(std::move(config)), signals_(io_) {}
  ~DaemonImpl() override {
    if (membership_) membership_->Stop();
    if (transport_) transport_->Stop();
    if (metrics_) metrics_->Stop();
    if (control_) control_->Stop();
    io_.stop();
    membership_.reset();
    env_.reset();  // joins the worker pool before the jobs go
    job_.reset();
    retired_.clear();
    control_.reset();
    transport_.reset();
  }

  Status Init();
  Status Run(bool handle_signals);
  void RequestStop() {
    asio::post(io_, [this] { Shutdown("stop requested"); });
  }
  // Membership messages to the membership, the rest to the running job.
  void OnMessage(NodeId from, MessagePtr msg) override {
    if (msg->kind() == gossip::kMembershipMessageKind) {
      if (membership_) membership_->OnMessage(from, std::move(msg));
    } else if (job_sink_ != nullptr) {
      job_sink_->OnMessage(from, std::move(msg));
    }
  }
  void OnMemberAlive(const gossip::Member& m) override;
  void OnMemberSuspect(const gossip::Member& m) override;
  void OnMemberDead(const gossip::Member& m) override;
  bool PeerAlive(NodeId peer) const {
    if (!membership_) return true;
    const auto m = membership_->Find(peer);
    return !m || (m->state != gossip::MemberState::kDead && m->state != gossip::MemberState::kLeft);
  }

  proto::NodeConfig config_;
  asio::io_context io_;
  asio::signal_set signals_;
  std::unique_ptr<AsioEnv> env_;
  std::unique_ptr<Transport> transport_;
  std::unique_ptr<MetricsServer> metrics_;
  std::unique_ptr<ControlServer> control_;
  std::unique_ptr<gossip::Ed25519Signer> signer_;
  std::unique_ptr<SessionKeys> session_keys_;
  std::unique_ptr<gossip::Membership> membership_;
  MessageSink* job_sink_ = nullptr;            // the running job's
  std::unique_ptr<Job> job_;                   // the current or last job
  std::vector<std::unique_ptr<Job>> retired_;  // ended jobs; callbacks may still name them
  std::string job_state_ = "idle";             // idle, running, draining, done, stopped, failed
  std::string job_error_;
  asio::steady_timer drain_timer_{io_};
  bool exit_after_job_ = false;  // the config's job: the daemon exits when it ends
  bool shutting_down_ = false;
  bool done_ = false;
  mutable std::mutex mu_;  // guards job_ pointer swaps against the accessors

 private:
  std::string DataPath(const char* name) const { return config_.data_dir() + "/" + name; }
  Status StartJob(const proto::JobConfig& job, bool resume);
  void OnJobEnd(Job::End how);
  void SaveJobState();
  void BeginDrain(const std::string& why);
  void Shutdown(const std::string& why);
  void Finish(Nanos linger);
  proto::ControlResponse OnControl(const proto::ControlRequest& request, const crypto::PeerInfo& from);
  proto::ControlResponse Submit(const proto::JobConfig& job);
  proto::JobStatus JobStatus() const;
  std::string RenderMetrics() const;
};

Status DaemonImpl::Init() {
  MURMUR_RETURN_IF_ERROR(ValidateNodeConfig(config_));
  LogLevel level;
  if (!ParseLogLevel(config_.log_level(), &level))
    return Status::InvalidArgument("config field 'log_level': '" + config_.log_level() + "' is unknown");
  SetLogLevel(level);
  const NodeId self = config_.node_id();

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

  // Transport, Env, metrics, control.
  TransportOptions to;
  to.self = self;
  MURMUR_ASSIGN_OR_RETURN(HostPort listen, ParseHostPort(config_.listen()));
  to.listen_host = listen.host;
  to.listen_port = listen.port;
  to.seed = config_.has_job() ? config_.job().seed() : self + 1;
  for (const auto& p : config_.peers()) {
    MURMUR_ASSIGN_OR_RETURN(HostPort hp, ParseHostPort(p.address()));
    PeerAddress pa{p.id(), hp.host, hp.port, std::nullopt};
    if (p.has_public_key()) {
      MURMUR_ASSIGN_OR_RETURN(pa.key, crypto::ParsePublicKeyText(p.public_key()));
    }
    to.peers.push_back(pa);
  }
  crypto::TrustPolicy policy{config_.network_id(), coordinator, crypto::kRoleNode};
  crypto::TrustPolicy operators{config_.network_id(), coordinator, crypto::kRoleOperator};
  env_ = std::make_unique<AsioEnv>(io_, self, to.seed, static_cast<int>(std::max(1u, config_.threads())));
  transport_ = std::make_unique<Transport>(io_, *creds, policy, to, [this](NodeId from, ReceivedMessage m) {
    env_->OnTransportMessage(from, std::move(m));
  });
  env_->SetTransport(transport_.get());
  env_->SetSink(this);
  MURMUR_RETURN_IF_ERROR(transport_->Start());
  // Membership (SWIM with Lifeguard, docs/membership.md): the configured
  // peers are the seeds; members learned from them are dialled.
  gossip::MembershipOptions mo;
  mo.address = listen.host.find(':') != std::string::npos
                   ? "[" + listen.host + "]:" + std::to_string(transport_->port())
                   : listen.host + ":" + std::to_string(transport_->port());
  for (const auto& p : config_.peers()) mo.seeds.push_back(p.id());
  signer_ = std::make_unique<gossip::Ed25519Signer>(identity);
  session_keys_ = std::make_unique<SessionKeys>(transport_.get());
  auto membership = gossip::Membership::Create(*env_, mo, *signer_, *session_keys_, this);
  if (!membership.ok()) return membership.status().WithContext("membership");
  membership_ = std::move(membership).value();
  membership_->Start();
  metrics_ = std::make_unique<MetricsServer>(io_, [this] { return RenderMetrics(); });
  MURMUR_ASSIGN_OR_RETURN(HostPort mhp, ParseHostPort(config_.metrics_listen()));
  MURMUR_RETURN_IF_ERROR(metrics_->Start(mhp.host, mhp.port));
  control_ = std::make_unique<ControlServer>(
      io_, std::move(creds).value(), operators,
      [this](const proto::ControlRequest& r, const crypto::PeerInfo& from) { return OnControl(r, from); });
  MURMUR_ASSIGN_OR_RETURN(HostPort chp, ParseHostPort(config_.control_listen()));
  MURMUR_RETURN_IF_ERROR(control_->Start(chp.host, chp.port));
  std::ostringstream ports;
  ports << "transport " << transport_->port() << "\nmetrics " << metrics_->port() << "\ncontrol "
        << control_->port() << "\n";
  MURMUR_RETURN_IF_ERROR(crypto::WriteFileAtomic(DataPath("ports"), crypto::AsBytes(ports.str()), 0644));

  // The job: the config's, or the one a restart interrupted.
  if (config_.has_job()) {
    exit_after_job_ = true;
    MURMUR_RETURN_IF_ERROR(ValidateJobConfig(config_.job(), self).WithContext("config field 'job'"));
    return StartJob(config_.job(), /*resume=*/true);
  }
  auto state = crypto::ReadSmallFile(DataPath(kJobStateFile), 4096);
  auto text = crypto::ReadSmallFile(DataPath(kJobFile), std::size_t{1} << 20);
  if (state.ok() && text.ok()) {
    proto::JobConfig job;
    if (!google::protobuf::TextFormat::ParseFromString(*text, &job))
      return Status::DataLoss("'" + DataPath(kJobFile) +
                              "' is not a valid JobConfig; remove it to start idle");
    job_state_ = state->substr(0, state->find('\n'));
    if (job_state_ == "running") {
      MURMUR_LOG(kInfo) << "node " << self << ": resuming job " << job.job_id();
      return StartJob(job, /*resume=*/true);
    }
    // A finished or stopped job: keep it for status until the next one.
    // (Built from its checkpoint and ended at once: status shows where it stopped.)
    auto ended = MakeJob(job, *env_, DataPath(kCheckpointFile), nullptr);
    if (ended.ok()) {
      job_ = std::move(ended).value();
      job_->Abandon();
    }
  }
  return Status::Ok();
}

Status DaemonImpl::StartJob(const proto::JobConfig& job, bool resume) {
  if (!resume) {
    std::remove(DataPath(kCheckpointFile).c_str());
    std::string text;
    google::protobuf::TextFormat::PrintToString(job, &text);
    MURMUR_RETURN_IF_ERROR(crypto::WriteFileAtomic(DataPath(kJobFile), crypto::AsBytes(text), 0644));
  }
  auto created = MakeJob(
      job, *env_, DataPath(kCheckpointFile), [this](Job::End how) { OnJobEnd(how); },
      [this](NodeId peer) { return PeerAlive(peer); });
  if (!created.ok()) return created.status();
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (job_) retired_.push_back(std::move(job_));
    job_ = std::move(created).value();
  }
  // Neighbours above this node must be dialable (the smaller id dials).
  for (NodeId peer : job_->neighbours()) {
    if (peer <= config_.node_id()) continue;
    bool known = false;
    for (const auto& p : config_.peers()) known = known || p.id() == peer;
    if (!known)
      MURMUR_LOG(kWarning) << "node " << config_.node_id() << ": job " << job.job_id() << " neighbour "
                           << peer << " has no address in 'peers'; waiting for it to be learned";
  }
  job_state_ = "running";
  job_error_.clear();
  if (!exit_after_job_) SaveJobState();
  job_sink_ = job_->sink();
  Job* started = job_.get();
  asio::post(io_, [started] { started->Start(); });
  return Status::Ok();
}

void DaemonImpl::SaveJobState() {
  Status st = crypto::WriteFileAtomic(DataPath(kJobStateFile), crypto::AsBytes(job_state_ + "\n"), 0644);
  if (!st.ok()) MURMUR_LOG(kError) << "job state: " << st.ToString();
}

void DaemonImpl::OnJobEnd(Job::End how) {
  drain_timer_.cancel();
  job_sink_ = nullptr;
  const char* what = how == Job::End::kCompleted ? "completed"
                     : how == Job::End::kDrained ? "drained"
                                                 : "abandoned";
  MURMUR_LOG(kInfo) << "node " << config_.node_id() << ": job " << job_->config().job_id() << " " << what
                    << " after round " << job_->rounds_done();
  if (how == Job::End::kCompleted) {
    job_state_ = "done";
  } else if (!shutting_down_) {
    job_state_ = "stopped";
  }  // a shutdown leaves it "running" on disk: it resumes at the next start
  if (!exit_after_job_ && !(shutting_down_ && how != Job::End::kCompleted)) SaveJobState();
  if (exit_after_job_) return Finish(how == Job::End::kCompleted ? Seconds(config_.linger()) : Nanos(0));
  if (shutting_down_) Finish(Nanos(0));
}

void DaemonImpl::BeginDrain(const std::string& why) {
  if (!job_ || job_->ended() || job_state_ == "draining") return;
  job_state_ = "draining";
  MURMUR_LOG(kInfo) << "node " << config_.node_id() << ": " << why << ", draining job "
                    << job_->config().job_id() << " after round " << job_->rounds_done();
  job_->Drain();
  drain_timer_.expires_after(Seconds(config_.drain_timeout()));
  drain_timer_.async_wait([this](const asio::error_code& ec) {
    if (ec || !job_ || job_->ended()) return;
    MURMUR_LOG(kInfo) << "node " << config_.node_id() << ": abandoning the round in progress";
    job_->Abandon();
  });
}

void DaemonImpl::Shutdown(const std::string& why) {
  if (done_) return;
  if (!shutting_down_ && membership_) membership_->Leave();  // peers stop waiting for this node
  shutting_down_ = true;
  if (job_ && !job_->ended()) return BeginDrain(why);
  MURMUR_LOG(kInfo) << "node " << config_.node_id() << ": " << why << ", exiting";
  Finish(Nanos(0));
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
    control_->Stop();
    asio::error_code ignored;
    signals_.cancel(ignored);
    io_.stop();
  });
}

Status DaemonImpl::Run(bool handle_signals) {
  if (handle_signals) {
    signals_.add(SIGTERM);
    signals_.add(SIGINT);
    signals_.async_wait([this](const asio::error_code& ec, int sig) {
      if (!ec) Shutdown(sig == SIGTERM ? "SIGTERM" : "SIGINT");
    });
  }
  MURMUR_LOG(kInfo) << "node " << config_.node_id() << ": listening on port " << transport_->port()
                    << ", metrics on " << metrics_->port() << ", control on " << control_->port() << ", job "
                    << (job_ ? job_->config().job_id() + " (" + job_state_ + ")" : std::string("none"));
  io_.run();
  return Status::Ok();
}

proto::ControlResponse DaemonImpl::OnControl(const proto::ControlRequest& request,
                                             const crypto::PeerInfo& from) {
  MURMUR_LOG(kInfo) << "control: request " << request.request_case() << " from operator "
                    << crypto::ToHex(from.certificate.node_key).substr(0, 16);
  proto::ControlResponse r;
  switch (request.request_case()) {
    case proto::ControlRequest::kSubmit: r = Submit(request.submit().job()); break;
    case proto::ControlRequest::kStop:
      if (!job_ || job_->ended()) return Refuse("no job is running");
      if (request.stop().has_job_id() && request.stop().job_id() != job_->config().job_id())
        return Refuse("the running job is '" + job_->config().job_id() + "', not '" +
                      request.stop().job_id() + "'");
      BeginDrain("operator stop");
      r.set_ok(true);
      break;
    case proto::ControlRequest::kStatus: r.set_ok(true); break;
    case proto::ControlRequest::kPeers:
      r.set_ok(true);
      {
        std::map<NodeId, proto::PeerStatus> peers;
        for (const auto& p : config_.peers()) {
          proto::PeerStatus& s = peers[p.id()];
          s.set_id(p.id());
          s.set_address(p.address());
          s.set_state("configured");
        }
        if (membership_) {
          for (const gossip::Member& m : membership_->Members()) {
            proto::PeerStatus& s = peers[m.id];
            s.set_id(m.id);
            if (!m.address.empty()) s.set_address(m.address);
            s.set_state(StateName(m.state));
            s.set_incarnation(m.incarnation);
          }
        }
        for (auto& [id, s] : peers) {
          s.set_connected(transport_->IsConnected(id));
          *r.add_peers() = s;
        }
        break;
      }
    case proto::ControlRequest::kMetrics:
      r.set_ok(true);
      r.set_metrics(RenderMetrics());
      break;
    default: return Refuse("unknown request");
  }
  r.set_node_id(config_.node_id());
  *r.mutable_job() = JobStatus();
  return r;
}

proto::ControlResponse DaemonImpl::Submit(const proto::JobConfig& job) {
  if (job_ && !job_->ended())
    return Refuse("job '" + job_->config().job_id() + "' is " + job_state_ +
                  "; stop it first (murmur job stop)");
  if (shutting_down_) return Refuse("the daemon is shutting down");
  Status st = ValidateJobConfig(job, config_.node_id());
  if (!st.ok()) return Refuse(st.ToString());
  // The same job again continues from its checkpoint, unless it completed.
  const bool same = job_ && job_->config().job_id() == job.job_id();
  if (same && job_state_ == "done")
    return Refuse("job '" + job.job_id() + "' already completed; give the next job a new job_id");
  if (same && job_->config().SerializeAsString() != job.SerializeAsString())
    return Refuse("job '" + job.job_id() + "' exists with another configuration; give this one a new job_id");
  st = StartJob(job, /*resume=*/same);
  if (!st.ok()) {
    job_state_ = "failed";
    job_error_ = st.ToString();
    return Refuse(st.ToString());
  }
  proto::ControlResponse r;
  r.set_ok(true);
  return r;
}

proto::JobStatus DaemonImpl::JobStatus() const {
  proto::JobStatus s;
  s.set_state(job_state_);
  if (!job_error_.empty()) s.set_error(job_error_);
  if (!job_) return s;
  s.set_job_id(job_->config().job_id());
  s.set_algorithm(job_->config().algorithm());
  s.set_rounds_done(job_->rounds_done());
  s.set_rounds_total(job_->config().rounds());
  s.set_test_accuracy(job_->accuracy());
  s.set_train_loss(job_->loss());
  return s;
}

std::string DaemonImpl::RenderMetrics() const {
  const TransportStats& s = transport_->stats();
  const bool job = job_ != nullptr;
  std::string out;
  out += PrometheusMetric("murmur_rounds_completed", "counter",
                          "Gossip rounds completed by the current job, including before a resume.",
                          static_cast<double>(job ? job_->rounds_done() : 0));
  out += PrometheusMetric("murmur_job_running", "gauge", "1 while a job runs (or drains), else 0.",
                          job && !job_->ended() ? 1.0 : 0.0);
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
  const std::pair<const char*, const std::atomic<std::uint64_t>*> scoring[] = {
      {"offences", &s.offences},
      {"graylistings", &s.graylistings},
      {"connections_refused", &s.connections_refused},
      {"handshakes_rate_limited", &s.handshakes_rate_limited},
      {"sessions_refused", &s.sessions_refused},
      {"messages_dropped_graylisted", &s.messages_dropped_graylisted},
      {"messages_rate_limited", &s.messages_rate_limited},
  };
  for (const auto& [name, value] : scoring) {
    out += PrometheusMetric(std::string("murmur_peer_") + name + "_total", "counter",
                            "Misbehaving peers (docs/security.md): " + std::string(name) + ".",
                            static_cast<double>(value->load()));
  }
  const gossip::MembershipCounts members = membership_ ? membership_->counts() : gossip::MembershipCounts{};
  out += PrometheusMetric("murmur_peers_alive", "gauge", "Members this node's membership view holds alive.",
                          static_cast<double>(members.alive));
  out += PrometheusMetric("murmur_peers_suspected", "gauge", "Members suspected of having failed (SWIM).",
                          static_cast<double>(members.suspect));
  out += PrometheusMetric("murmur_peers_dead", "gauge", "Members declared dead or left, not yet forgotten.",
                          static_cast<double>(members.dead));
  out += PrometheusMetric("murmur_membership_rejected_total", "counter",
                          "Membership messages dropped: bad signature or header.",
                          membership_ ? static_cast<double>(membership_->stats().rejected_signature +
                                                            membership_->stats().rejected_header)
                                      : 0.0);
  out += PrometheusMetric("murmur_control_requests_total", "counter", "Operator requests answered.",
                          static_cast<double>(control_->requests()));
  out += PrometheusMetric("murmur_control_failures_total", "counter",
                          "Operator connections refused: failed handshake, bad request, timeout.",
                          static_cast<double>(control_->failures()));
  out += PrometheusMetric("murmur_train_loss", "gauge", "Mean training loss of the last round.",
                          job ? job_->loss() : 0.0);
  out +=
      PrometheusMetric("murmur_test_accuracy", "gauge",
                       "Test accuracy at the last evaluation (-1: none yet).", job ? job_->accuracy() : -1.0);
  out += PrometheusMetric("murmur_checkpoints_written_total", "counter",
                          "Checkpoints written by the current job.",
                          static_cast<double>(job ? job_->checkpoints() : 0));
  return out;
}

void DaemonImpl::OnMemberAlive(const gossip::Member& m) {
  MURMUR_LOG(kInfo) << "node " << config_.node_id() << ": member " << m.id << " alive (incarnation "
                    << m.incarnation << ", " << m.address << ")";
  auto hp = ParseHostPort(m.address);
  if (hp.ok() && !transport_->IsConnected(m.id)) {
    bool configured = false;
    for (const auto& p : config_.peers()) configured = configured || p.id() == m.id;
    if (!configured) transport_->AddPeer(PeerAddress{m.id, hp->host, hp->port, std::nullopt});
  }
  if (job_ && !job_->ended()) job_->PeersChanged();
}

void DaemonImpl::OnMemberSuspect(const gossip::Member& m) {
  MURMUR_LOG(kInfo) << "node " << config_.node_id() << ": member " << m.id << " suspected";
}

void DaemonImpl::OnMemberDead(const gossip::Member& m) {
  MURMUR_LOG(kWarning) << "node " << config_.node_id() << ": member " << m.id << " "
                       << (m.state == gossip::MemberState::kLeft ? "left" : "declared dead");
  if (job_ && !job_->ended()) job_->PeersChanged();
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
std::uint16_t Daemon::control_port() const { return impl_->control_->port(); }
std::uint64_t Daemon::rounds_done() const {
  std::lock_guard<std::mutex> lock(impl_->mu_);
  return impl_->job_ ? impl_->job_->rounds_done() : 0;
}
double Daemon::last_accuracy() const {
  std::lock_guard<std::mutex> lock(impl_->mu_);
  return impl_->job_ ? impl_->job_->accuracy() : -1;
}
std::vector<float> Daemon::params() const {
  std::lock_guard<std::mutex> lock(impl_->mu_);
  return impl_->job_ ? impl_->job_->params() : std::vector<float>{};
}

}  // namespace murmur::node
