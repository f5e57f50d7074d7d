#include "node/daemon_impl.h"

#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <future>
#include <map>
#include <optional>
#include <sstream>

#include <google/protobuf/text_format.h>

#include "core/log.h"
#include "crypto/certificate.h"
#include "crypto/file_io.h"
#include "crypto/identity.h"
#include "engine/faults.h"
#include "engine/files.h"
#include "node/certificate_reload.h"
#include "node/config.h"
#include "node/fd_budget.h"
#include "node/job/checkpoint.h"
#include "node/job/decoders.h"
#include "node/job/factory.h"
#include "node/job/job_message.h"
#include "node/job/job_store.h"

namespace murmur::node {

namespace {

constexpr const char* kJobFile = "job.conf";
constexpr const char* kJobStateFile = "job.state";

}  // namespace

Status DaemonImpl::Init() {
  MURMUR_RETURN_IF_ERROR(ValidateNodeConfig(config_));
  LogLevel level;
  if (!ParseLogLevel(config_.log_level(), &level))
    return Status::InvalidArgument("config field 'log_level': '" + config_.log_level() + "' is unknown");
  SetLogLevel(level);
  const NodeId self = config_.node_id();
  // Every connection bound is a descriptor bound: they must fit together.
  std::uint64_t soft = 0;
  MURMUR_RETURN_IF_ERROR(EnsureDescriptors(NeededDescriptors(config_), &soft));

  // Keys and admission.
  const std::string key_path =
      config_.has_identity() ? config_.identity() : config_.data_dir() + "/identity.key";
  const std::string& cert_path = cert_path_ =
      config_.has_certificate() ? config_.certificate() : config_.data_dir() + "/node.cert";
  MURMUR_ASSIGN_OR_RETURN(crypto::Identity identity, crypto::Identity::LoadKeyFile(key_path));
  MURMUR_ASSIGN_OR_RETURN(crypto::Certificate cert, crypto::LoadCertificateFile(cert_path));
  MURMUR_ASSIGN_OR_RETURN(crypto::SignPublicKey coordinator,
                          crypto::PublicKeyFromArg(config_.coordinator_key()));
  MURMUR_RETURN_IF_ERROR(
      crypto::ValidateNetworkId(config_.network_id()).WithContext("config field 'network_id'"));
  auto creds = crypto::Credentials::Make(identity, cert);
  if (!creds.ok()) return creds.status().WithContext("certificate '" + cert_path + "'");
  bool legacy = false;
  MURMUR_RETURN_IF_ERROR(
      CheckOwnCertificate(cert, self, &legacy).WithContext("certificate '" + cert_path + "'"));
  if (legacy) WarnLegacyCertificate(cert_path);

  // Transport, Env, metrics, control.
  TransportOptions to;
  to.self = self;
  MURMUR_ASSIGN_OR_RETURN(HostPort listen, ParseHostPort(config_.listen()));
  to.listen_host = listen.host;
  to.listen_port = listen.port;
  to.seed = config_.has_job() ? config_.job().spec().seed() : self + 1;
  to.max_sessions = config_.max_sessions();
  to.pending = {config_.max_pending_handshakes(), config_.max_pending_handshakes_per_address()};
  to.scoring.messages_per_second = config_.message_rate_per_address();
  to.scoring.message_burst = config_.message_burst_per_address();
  for (const auto& p : config_.peers()) {
    MURMUR_ASSIGN_OR_RETURN(HostPort hp, ParseHostPort(p.address()));
    PeerAddress pa{p.id(), hp.host, hp.port, std::nullopt};
    if (p.has_public_key()) {
      MURMUR_ASSIGN_OR_RETURN(pa.key, crypto::ParsePublicKeyText(p.public_key()));
    }
    to.peers.push_back(pa);
  }
  const bool aes_gcm = config_.cipher() == "auto";
  crypto::TrustPolicy policy{config_.network_id(), coordinator, crypto::kRoleNode, aes_gcm};
  node_policy_ = policy;
  crypto::TrustPolicy operators{config_.network_id(), coordinator, crypto::kRoleOperator, aes_gcm};
  env_ = std::make_unique<AsioEnv>(io_, self, to.seed, static_cast<int>(std::max(1u, config_.threads())));
  transport_ = std::make_unique<Transport>(io_, *creds, policy, to, [this](NodeId from, ReceivedMessage m) {
    env_->OnTransportMessage(from, std::move(m));
  });
  env_->SetTransport(transport_.get());
  env_->SetSink(this);
  // The transport knows no protocol: the jobs' kinds, then membership's.
  env_->RegisterDecoders(JobDecoders());
  env_->RegisterDecoder(membership::kMembershipMessageKind, membership::MembershipDecoder());
  if (config_.fault_injection()) {
    faulty_ = std::make_unique<FaultyEnv>(env_.get(), &fault_plan_);
    MURMUR_RETURN_IF_ERROR(engine::ApplyFaults(config_.faults(), engine::kMaxFaultNodeId,
                                               engine::FaultTime::kUntilCleared, fault_plan_)
                               .WithContext("config field 'faults'"));
    faults_ = config_.faults();
    MURMUR_LOG(kWarning) << "node " << self
                         << ": fault injection is on; faults: " << engine::DescribeFaults(faults_);
  }
  MURMUR_RETURN_IF_ERROR(transport_->Start());
  // Membership (SWIM with Lifeguard, docs/membership.md): the configured
  // peers are the seeds; members learned from them are dialled.
  membership::MembershipOptions mo;
  mo.address = listen.host.find(':') != std::string::npos
                   ? "[" + listen.host + "]:" + std::to_string(transport_->port())
                   : listen.host + ":" + std::to_string(transport_->port());
  for (const auto& p : config_.peers()) mo.seeds.push_back(p.id());
  mo.max_members_per_peer = config_.max_members_per_peer();
  signer_ = std::make_unique<CertifiedSigner>(identity, cert);
  identity_ = std::make_unique<crypto::Identity>(identity);
  member_keys_ = std::make_unique<MemberKeys>(transport_.get(), node_policy_);
  auto membership = membership::Membership::Create(net(), mo, *signer_, *member_keys_, this);
  if (!membership.ok()) return membership.status().WithContext("membership");
  membership_ = std::move(membership).value();
  membership_->Start();
  metrics_ = std::make_unique<MetricsServer>(io_, [this] { return RenderMetrics(); });
  MURMUR_ASSIGN_OR_RETURN(HostPort mhp, ParseHostPort(config_.metrics_listen()));
  MURMUR_RETURN_IF_ERROR(metrics_->Start(mhp.host, mhp.port));
  ControlServerOptions co;
  co.handshake_timeout = FromSeconds(config_.control_handshake_timeout());
  co.max_sessions = config_.control_max_sessions();
  co.pending = {config_.control_max_pending(), config_.control_max_pending_per_address()};
  control_ = std::make_unique<ControlServer>(
      io_, std::move(creds).value(), operators,
      [this](const proto::ControlRequest& r, const crypto::PeerInfo& from) { return OnControl(r, from); },
      co);
  MURMUR_ASSIGN_OR_RETURN(HostPort chp, ParseHostPort(config_.control_listen()));
  MURMUR_RETURN_IF_ERROR(control_->Start(chp.host, chp.port));
  std::ostringstream ports;
  ports << "transport " << transport_->port() << "\nmetrics " << metrics_->port() << "\ncontrol "
        << control_->port() << "\n";
  MURMUR_RETURN_IF_ERROR(crypto::WriteFileAtomic(DataPath("ports"), crypto::AsBytes(ports.str()), 0644));

  // The last job a restart finds (job.conf), and the jobs' files.
  auto state = crypto::ReadSmallFile(DataPath(kJobStateFile), 4096);
  auto text = crypto::ReadSmallFile(DataPath(kJobFile), std::size_t{1} << 20);
  std::optional<proto::JobConfig> last;
  if (text.ok()) {
    std::vector<std::string> warnings;
    auto parsed = engine::ParseJobConfig(*text, DataPath(kJobFile), &warnings);
    if (!parsed.ok()) {
      // Appended, not "'" + path: GCC 12's -Wrestrict misreads the inlined
      // concatenation of a one-character literal (GCC bug 105329).
      std::string why = "'";
      why += DataPath(kJobFile);
      why += "' is not a valid JobConfig (";
      why += parsed.status().message();
      why += "); remove it to start idle";
      return Status::DataLoss(why);
    }
    for (const auto& w : warnings) MURMUR_LOG(kWarning) << "node " << self << ": " << w;
    last = std::move(parsed).value();
  }
  MURMUR_ASSIGN_OR_RETURN(JobStore store, JobStore::Open(config_.data_dir(), last ? last->job_id() : ""));
  store_ = std::make_unique<JobStore>(std::move(store));

  // The job: the config's, or the one a restart interrupted.
  if (config_.has_job()) {
    exit_after_job_ = true;
    MURMUR_RETURN_IF_ERROR(ValidateJobConfig(config_.job(), self).WithContext("config field 'job'"));
    // A completed job ends at once on its final checkpoint; one whose
    // checkpoint is no longer kept is not run again from round 0.
    MURMUR_ASSIGN_OR_RETURN(std::string checkpoint, store_->CheckpointPath(config_.job().job_id()));
    if (store_->Completed(config_.job()) && !std::filesystem::exists(checkpoint))
      return Status::FailedPrecondition("config field 'job': job '" + config_.job().job_id() +
                                        "' already completed on this daemon (DATA_DIR/jobs/completed); give "
                                        "the next job a new job_id");
    return StartJob(config_.job(), /*submitted=*/false);
  }
  if (state.ok() && last) {
    proto::JobConfig job = *last;
    job_state_ = state->substr(0, state->find('\n'));
    if (job_state_ == "running") {
      MURMUR_LOG(kInfo) << "node " << self << ": resuming job " << job.job_id();
      return StartJob(job, /*submitted=*/false);
    }
    // A finished or stopped job: keep it for status until the next one.
    // (Built from its checkpoint and ended at once: status shows where it stopped.)
    MURMUR_ASSIGN_OR_RETURN(std::string checkpoint, store_->CheckpointPath(job.job_id()));
    auto ended = MakeJob(job, net(), checkpoint, nullptr, {}, LocalDataOf(config_), Keys());
    if (ended.ok()) {
      job_ = std::move(ended).value();
      job_->Abandon();
    }
  }
  return Status::Ok();
}

void DaemonImpl::WarnLegacyCertificate(const std::string& path) const {
  MURMUR_LOG(kWarning) << "node " << config_.node_id() << ": certificate '" << path
                       << "' is version 1 and binds no node id: peers accept it only where their config pins "
                          "this node's key; reissue it with `murmur cert issue --node-id "
                       << config_.node_id() << "`";
}

Status DaemonImpl::StartJob(const proto::JobConfig& job, bool submitted) {
  // Each job has its own checkpoint: a new job starts at round 0, and one
  // submitted again goes on from its own (if its configuration is the same).
  MURMUR_ASSIGN_OR_RETURN(std::string checkpoint, store_->CheckpointPath(job.job_id()));
  if (submitted) {  // the job a restart resumes
    std::string text;
    google::protobuf::TextFormat::PrintToString(job, &text);
    MURMUR_RETURN_IF_ERROR(crypto::WriteFileAtomic(DataPath(kJobFile), crypto::AsBytes(text), 0644));
  }
  auto created = MakeJob(
      job, net(), checkpoint, [this](Job::End how) { OnJobEnd(how); },
      [this](NodeId peer) { return PeerAlive(peer); }, LocalDataOf(config_), Keys());
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
  router_.Run(JobTag(job), job_->sink());
  Job* started = job_.get();
  asio::post(io_, [this, started] {
    started->Start();
    // The gossip messages of its first two rounds that came before it started.
    if (job_.get() == started && !started->ended()) router_.DeliverEarly(started->rounds_done());
  });
  return Status::Ok();
}

void DaemonImpl::SaveJobState() {
  Status st = crypto::WriteFileAtomic(DataPath(kJobStateFile), crypto::AsBytes(job_state_ + "\n"), 0644);
  if (!st.ok()) MURMUR_LOG(kError) << "job state: " << st.ToString();
}

void DaemonImpl::OnJobEnd(Job::End how) {
  drain_timer_.cancel();
  router_.Idle();
  const char* what = how == Job::End::kCompleted ? "completed"
                     : how == Job::End::kDrained ? "drained"
                                                 : "abandoned";
  MURMUR_LOG(kInfo) << "node " << config_.node_id() << ": job " << job_->config().job_id() << " " << what
                    << " after round " << job_->rounds_done();
  if (how == Job::End::kCompleted) {
    job_state_ = "done";
    Status st = store_->MarkCompleted(job_->config().job_id(), job_->rounds_done());
    if (!st.ok()) MURMUR_LOG(kError) << "the record of completed jobs: " << st.ToString();
  } else if (!shutting_down_) {
    job_state_ = "stopped";
  }  // a shutdown leaves it "running" on disk: it resumes at the next start
  if (!exit_after_job_ && !(shutting_down_ && how != Job::End::kCompleted)) SaveJobState();
  if (exit_after_job_) return Finish(how == Job::End::kCompleted ? FromSeconds(config_.linger()) : Nanos(0));
  if (shutting_down_) Finish(Nanos(0));
}

void DaemonImpl::BeginDrain(const std::string& why) {
  if (!job_ || job_->ended() || job_state_ == "draining") return;
  job_state_ = "draining";
  MURMUR_LOG(kInfo) << "node " << config_.node_id() << ": " << why << ", draining job "
                    << job_->config().job_id() << " after round " << job_->rounds_done();
  job_->Drain();
  drain_timer_.expires_after(FromSeconds(config_.drain_timeout()));
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
    reload_signals_.cancel(ignored);
    io_.stop();
  });
}

Status DaemonImpl::ReloadCertificate(const std::string& why) {
  const std::int64_t now =
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
          .count();
  auto renewed = LoadRenewedCredentials(cert_path_, transport_->credentials(), node_policy_, now);
  if (!renewed.ok()) {
    ++cert_reload_failures_;
    MURMUR_LOG(kError) << "node " << config_.node_id() << ": " << why << ": certificate reload refused, "
                       << "keeping " << DescribeCertificate(transport_->credentials().certificate) << ": "
                       << renewed.status().ToString();
    return renewed.status();
  }
  if (renewed->certificate == transport_->credentials().certificate) {
    MURMUR_LOG(kInfo) << "node " << config_.node_id() << ": " << why << ": certificate unchanged ("
                      << DescribeCertificate(renewed->certificate) << ")";
    return Status::Ok();
  }
  bool legacy = false;
  Status own = CheckOwnCertificate(renewed->certificate, config_.node_id(), &legacy);
  if (!own.ok()) {
    ++cert_reload_failures_;
    MURMUR_LOG(kError) << "node " << config_.node_id() << ": " << why
                       << ": certificate reload refused: " << own.ToString();
    return own.WithContext("certificate '" + cert_path_ + "'");
  }
  if (legacy) WarnLegacyCertificate(cert_path_);
  const std::string before = DescribeCertificate(transport_->credentials().certificate);
  MURMUR_RETURN_IF_ERROR(transport_->SetCredentials(*renewed));  // same identity: cannot fail
  control_->SetCredentials(*renewed);
  signer_->SetCertificate(renewed->certificate);
  ++cert_reloads_;
  MURMUR_LOG(kWarning) << "node " << config_.node_id() << ": " << why << ": certificate renewed, now "
                       << DescribeCertificate(renewed->certificate) << " (was " << before << ")";
  return Status::Ok();
}

void DaemonImpl::WaitReloadSignal() {
  reload_signals_.async_wait([this](const asio::error_code& ec, int) {
    if (ec || done_) return;
    (void)ReloadCertificate("SIGHUP");  // logged and counted there
    WaitReloadSignal();
  });
}

Status DaemonImpl::Run(bool handle_signals) {
  if (handle_signals) {
    signals_.add(SIGTERM);
    signals_.add(SIGINT);
    signals_.async_wait([this](const asio::error_code& ec, int sig) {
      if (!ec) Shutdown(sig == SIGTERM ? "SIGTERM" : "SIGINT");
    });
    reload_signals_.add(SIGHUP);
    WaitReloadSignal();
  }
  MURMUR_LOG(kInfo) << "node " << config_.node_id() << ": listening on port " << transport_->port()
                    << ", metrics on " << metrics_->port() << ", control on " << control_->port() << ", job "
                    << (job_ ? job_->config().job_id() + " (" + job_state_ + ")" : std::string("none"));
  io_.run();
  return Status::Ok();
}

void DaemonImpl::OnMemberAlive(const membership::Member& m) {
  MURMUR_LOG(kInfo) << "node " << config_.node_id() << ": member " << m.id << " alive (incarnation "
                    << m.incarnation << ", " << m.address << ")";
  auto hp = ParseHostPort(m.address);
  if (hp.ok() && !transport_->IsConnected(m.id)) {
    bool configured = false;
    for (const auto& p : config_.peers()) configured = configured || p.id() == m.id;
    // The address is the member's own signed word; who answers there must
    // still present a certificate for that node id. No key is pinned: the
    // coordinator may have certified a new one for it since (a re-keyed node).
    if (!configured) transport_->AddPeer(PeerAddress{m.id, hp->host, hp->port, std::nullopt});
  }
  if (job_ && !job_->ended()) job_->PeersChanged();
}

void DaemonImpl::OnRejected(NodeId from, membership::Rejection why) {
  transport_->ReportMisbehaviour(
      from, why == membership::Rejection::kBadHeader ? Offence::kProtocolViolation : Offence::kBadSignature);
}

void DaemonImpl::OnMemberSuspect(const membership::Member& m) {
  MURMUR_LOG(kInfo) << "node " << config_.node_id() << ": member " << m.id << " suspected";
}

void DaemonImpl::OnMemberDead(const membership::Member& m) {
  MURMUR_LOG(kWarning) << "node " << config_.node_id() << ": member " << m.id << " "
                       << (m.state == membership::MemberState::kLeft ? "left" : "declared dead");
  if (job_ && !job_->ended()) job_->PeersChanged();
}

// DaemonImpl's answers to operators (node/control/server.h) and its
// Prometheus metrics.

namespace {
const char* StateName(membership::MemberState s) {
  switch (s) {
    case membership::MemberState::kAlive: return "alive";
    case membership::MemberState::kSuspect: return "suspect";
    case membership::MemberState::kDead: return "dead";
    case membership::MemberState::kLeft: return "left";
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

proto::ControlResponse DaemonImpl::OnControl(const proto::ControlRequest& request,
                                             const crypto::PeerInfo& from) {
  MURMUR_LOG(kInfo) << "control: request " << request.request_case() << " from operator "
                    << crypto::ToHex(from.certificate.node_key).substr(0, 16);
  proto::ControlResponse r;
  switch (request.request_case()) {
    case proto::ControlRequest::kSubmit: r = Submit(request.submit().job()); break;
    case proto::ControlRequest::kPrepare: r = Prepare(request.prepare().job()); break;
    case proto::ControlRequest::kCommit: r = Commit(request.commit().job_id()); break;
    case proto::ControlRequest::kAbort:
      if (prepared_ && prepared_->job.job_id() == request.abort().job_id()) prepared_.reset();
      r.set_ok(true);
      break;
    case proto::ControlRequest::kStop:
      // Nothing running is nothing to stop: the reply says the job's state.
      if (!job_ || job_->ended()) {
        r.set_ok(true);
        break;
      }
      if (request.stop().has_job_id() && request.stop().job_id() != job_->config().job_id()) {
        r = Refuse("the running job is '" + job_->config().job_id() + "', not '" + request.stop().job_id() +
                   "'");
        break;
      }
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
          for (const membership::Member& m : membership_->Members()) {
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
    case proto::ControlRequest::kFaultSet: r = SetFaults(request.fault_set().faults()); break;
    case proto::ControlRequest::kFaultClear: r = SetFaults(proto::FaultConfig{}); break;
    case proto::ControlRequest::kCertReload: r = ReloadCertificateRequest(); break;
    default: r = Refuse("unknown request"); break;
  }
  // Every reply, a refusal too, says which node answered and where its job stands.
  r.set_node_id(config_.node_id());
  *r.mutable_job() = JobStatus();
  return r;
}

std::string DaemonImpl::RefuseSubmission(const proto::JobConfig& job) {
  if (job_ && !job_->ended())
    return "job '" + job_->config().job_id() + "' is " + job_state_ + "; stop it first (murmur job stop)";
  if (shutting_down_) return "the daemon is shutting down";
  if (prepared_ && std::chrono::steady_clock::now() >= prepared_->deadline) prepared_.reset();
  if (prepared_ && prepared_->job.job_id() != job.job_id())
    return "job '" + prepared_->job.job_id() +
           "' is prepared here by another submission (it is committed, aborted or dropped within " +
           std::to_string(kPrepareHoldSeconds) + " s)";
  Status st = ValidateJobConfig(job, config_.node_id());
  if (!st.ok()) return st.ToString();
  // The same job again continues from its checkpoint (with more rounds
  // also once it completed).
  if (store_->Completed(job))
    return "job '" + job.job_id() +
           "' already completed on this daemon; give the next job a new job_id (or submit it with more "
           "rounds "
           "to train it further)";
  if (job_ && job_->config().job_id() == job.job_id() && OwnerTag(job_->config()) != OwnerTag(job))
    return "job '" + job.job_id() + "' exists with another configuration; give this one a new job_id";
  return "";
}

proto::ControlResponse DaemonImpl::Submit(const proto::JobConfig& job) {
  if (std::string why = RefuseSubmission(job); !why.empty()) return Refuse(std::move(why));
  prepared_.reset();
  Status st = StartJob(job, /*submitted=*/true);
  if (!st.ok()) {
    job_state_ = "failed";
    job_error_ = st.ToString();
    return Refuse(st.ToString());
  }
  proto::ControlResponse r;
  r.set_ok(true);
  return r;
}

proto::ControlResponse DaemonImpl::Prepare(const proto::JobConfig& job) {
  if (std::string why = RefuseSubmission(job); !why.empty()) return Refuse(std::move(why));
  prepared_ = Prepared{job, std::chrono::steady_clock::now() + std::chrono::seconds(kPrepareHoldSeconds)};
  MURMUR_LOG(kInfo) << "node " << config_.node_id() << ": job " << job.job_id() << " prepared";
  proto::ControlResponse r;
  r.set_ok(true);
  return r;
}

proto::ControlResponse DaemonImpl::Commit(const std::string& job_id) {
  if (prepared_ && std::chrono::steady_clock::now() >= prepared_->deadline) prepared_.reset();
  if (!prepared_ || prepared_->job.job_id() != job_id)
    return Refuse("no job '" + job_id + "' is prepared here (a prepared job is dropped after " +
                  std::to_string(kPrepareHoldSeconds) + " s without its commit)");
  const proto::JobConfig job = std::move(prepared_->job);
  prepared_.reset();
  return Submit(job);
}

proto::ControlResponse DaemonImpl::SetFaults(const proto::FaultConfig& faults) {
  if (!faulty_) return Refuse("fault injection is off on this daemon (config field 'fault_injection')");
  Status st =
      engine::ApplyFaults(faults, engine::kMaxFaultNodeId, engine::FaultTime::kUntilCleared, fault_plan_);
  if (!st.ok()) return Refuse(st.ToString());
  faults_ = faults;
  MURMUR_LOG(kWarning) << "node " << config_.node_id() << ": faults now " << engine::DescribeFaults(faults_);
  proto::ControlResponse r;
  r.set_ok(true);
  r.set_faults(engine::DescribeFaults(faults_));
  return r;
}

proto::ControlResponse DaemonImpl::ReloadCertificateRequest() {
  Status st = ReloadCertificate("operator reload");
  proto::ControlResponse r = st.ok() ? proto::ControlResponse{} : Refuse(st.ToString());
  r.set_ok(st.ok());
  r.set_certificate(DescribeCertificate(transport_->credentials().certificate));
  return r;
}

proto::JobStatus DaemonImpl::JobStatus() const {
  proto::JobStatus s;
  s.set_state(job_state_);
  if (!job_error_.empty()) s.set_error(job_error_);
  if (!job_) return s;
  s.set_job_id(job_->config().job_id());
  s.set_algorithm(job_->config().spec().algorithm());
  s.set_role(job_->role());
  s.set_rounds_done(job_->rounds_done());
  s.set_epsilon(job_->epsilon());  // after rounds_done: at least that round's
  s.set_rounds_total(job_->config().spec().rounds());
  s.set_test_accuracy(job_->accuracy());
  s.set_train_loss(job_->loss());
  if (job_error_.empty()) {
    const std::string warning = job_->warning();
    if (!warning.empty()) s.set_error(warning);
  }
  return s;
}

std::string DaemonImpl::RenderMetrics() const {
  const TransportStats& s = transport_->stats();
  const bool job = job_ != nullptr;
  std::string out;
  out += PrometheusMetric("murmur_rounds_completed_total", "counter",
                          "Rounds completed by the current job, including before a resume.",
                          static_cast<double>(job ? job_->rounds_done() : 0));
  out += PrometheusMetric("murmur_job_running", "gauge", "1 while a job runs (or drains), else 0.",
                          job && !job_->ended() ? 1.0 : 0.0);
  out += PrometheusMetric("murmur_messages_other_job_total", "counter",
                          "Job messages dropped because their job tag was not the running job's (or absent).",
                          static_cast<double>(router_.other_job()));
  out += PrometheusMetric("murmur_bytes_sent_total", "counter", "Bytes written to peer connections.",
                          static_cast<double>(s.bytes_sent.load()));
  out += PrometheusMetric("murmur_bytes_received_total", "counter", "Bytes read from peer connections.",
                          static_cast<double>(s.bytes_received.load()));
  out += PrometheusMetric("murmur_peers_connected", "gauge", "Peers with an authenticated session.",
                          static_cast<double>(s.peers_connected.load()));
  out +=
      PrometheusMetric("murmur_handshake_failures_total", "counter", "Handshakes that failed or timed out.",
                       static_cast<double>(s.handshake_failures.load()));
  out += PrometheusMetric("murmur_sessions_opened_total", "counter", "Authenticated peer sessions opened.",
                          static_cast<double>(s.sessions_opened.load()));
  out += PrometheusMetric("murmur_sessions_aesgcm_total", "counter",
                          "Peer sessions opened on AES-256-GCM (the others on ChaCha20-Poly1305).",
                          static_cast<double>(s.sessions_aes_gcm.load()));
  out += PrometheusMetric("murmur_sessions_expired_total", "counter",
                          "Sessions closed because the peer's or this node's certificate expired.",
                          static_cast<double>(s.sessions_expired.load()));
  out += PrometheusMetric("murmur_certificate_not_after_seconds", "gauge",
                          "Unix time at which the certificate this node presents expires.",
                          static_cast<double>(transport_->credentials().certificate.not_after));
  out += PrometheusMetric("murmur_certificate_reloads_total", "counter",
                          "Renewed certificates taken without a restart (SIGHUP, murmur cert reload).",
                          static_cast<double>(cert_reloads_.load()));
  out += PrometheusMetric("murmur_certificate_reload_failures_total", "counter",
                          "Certificate reloads refused; the certificate in use stayed.",
                          static_cast<double>(cert_reload_failures_.load()));
  out += PrometheusMetric("murmur_certificates_presented_total", "counter",
                          "Renewed certificates sent to peers on open sessions.",
                          static_cast<double>(s.certificates_presented.load()));
  out += PrometheusMetric("murmur_peer_certificate_updates_total", "counter",
                          "Peers' renewed certificates taken on open sessions.",
                          static_cast<double>(s.certificate_updates.load()));
  out += PrometheusMetric("murmur_peer_certificate_updates_refused_total", "counter",
                          "Peers' renewed certificates refused (the session keeps the old one).",
                          static_cast<double>(s.certificate_updates_refused.load()));
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
      {"pending_refused", &s.pending_refused},
      {"pending_shed", &s.pending_shed},
      {"sessions_over_limit", &s.sessions_over_limit},
      {"legacy_certificates", &s.legacy_certificates},
      {"dials_deferred", &s.dials_deferred},
  };
  for (const auto& [name, value] : scoring) {
    out += PrometheusMetric(std::string("murmur_peer_") + name + "_total", "counter",
                            "Misbehaving peers (docs/security.md): " + std::string(name) + ".",
                            static_cast<double>(value->load()));
  }
  const membership::MembershipCounts members =
      membership_ ? membership_->counts() : membership::MembershipCounts{};
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
  out += PrometheusMetric("murmur_control_shed_total", "counter",
                          "Operator connections still in their handshake closed to make room for newer ones.",
                          static_cast<double>(control_->shed()));
  out += PrometheusMetric(
      "murmur_accept_resource_errors_total", "counter",
      "Accepts that failed for want of file descriptors or memory (the listeners back off; docs/daemon.md).",
      static_cast<double>(transport_->accept_resource_errors() + control_->accept_resource_errors() +
                          metrics_->accept_resource_errors()));
  out += PrometheusMetric("murmur_control_failures_total", "counter",
                          "Operator connections refused: failed handshake, bad request, timeout.",
                          static_cast<double>(control_->failures()));
  out += PrometheusMetric("murmur_train_loss", "gauge", "Mean training loss of the last round.",
                          job ? job_->loss() : 0.0);
  out +=
      PrometheusMetric("murmur_test_accuracy", "gauge",
                       "Test accuracy at the last evaluation (-1: none yet).", job ? job_->accuracy() : -1.0);
  out += PrometheusMetric("murmur_rounds_mixed_twice_total", "counter",
                          "Gossip rounds this node mixed a second time (must stay 0).",
                          static_cast<double>(job ? job_->rounds_mixed_twice() : 0));
  out += PrometheusMetric("murmur_rounds_skipped_total", "counter",
                          "Gossip rounds skipped by catching up with a neighbour ahead.",
                          static_cast<double>(job ? job_->rounds_skipped() : 0));
  if (faulty_) {
    const FaultStats& f = faulty_->stats();
    const std::pair<const char*, std::uint64_t> faults[] = {
        {"sent", f.sent},           {"partitioned", f.partitioned}, {"dropped", f.dropped},
        {"corrupted", f.corrupted}, {"duplicated", f.duplicated},   {"reordered", f.reordered},
        {"delayed", f.delayed},
    };
    for (const auto& [name, value] : faults) {
      out += PrometheusMetric(std::string("murmur_fault_") + name + "_total", "counter",
                              "Fault injection (docs/security.md): sends " + std::string(name) + ".",
                              static_cast<double>(value));
    }
  }
  out += PrometheusMetric("murmur_checkpoints_written_total", "counter",
                          "Checkpoints written by the current job.",
                          static_cast<double>(job ? job_->checkpoints() : 0));
  return out;
}

}  // namespace murmur::node
