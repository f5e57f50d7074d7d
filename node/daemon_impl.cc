#include "node/daemon_impl.h"

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <future>
#include <map>
#include <optional>
#include <sstream>

#include <google/protobuf/text_format.h>

#include "config/files.h"
#include "core/log.h"
#include "crypto/certificate.h"
#include "crypto/file_io.h"
#include "crypto/identity.h"
#include "engine/faults.h"
#include "node/certificate_reload.h"
#include "node/config.h"
#include "node/cpu_features.h"
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

// Seconds since the Unix epoch: what certificate validity is checked against.
std::int64_t UnixSeconds() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

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
  // Each error names the config field the path or key came from.
  auto field = [&](const char* name, bool set) {
    return std::string("config field '") + name + "'" + (set ? "" : " (not set: its default in data_dir)");
  };
  auto loaded_identity = crypto::Identity::LoadKeyFile(key_path);
  if (!loaded_identity.ok())
    return loaded_identity.status().WithContext(field("identity", config_.has_identity()));
  crypto::Identity identity = std::move(loaded_identity).value();
  auto loaded_cert = crypto::LoadCertificateFile(cert_path);
  if (!loaded_cert.ok())
    return loaded_cert.status().WithContext(field("certificate", config_.has_certificate()));
  const crypto::Certificate& cert = *loaded_cert;
  auto coordinator_key = crypto::PublicKeyFromArg(config_.coordinator_key());
  if (!coordinator_key.ok())
    return coordinator_key.status().WithContext(
        "config field 'coordinator_key' (a public key file, or the key as 64 hex digits)");
  const crypto::SignPublicKey coordinator = *coordinator_key;
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
  to.relays.assign(config_.relays().begin(), config_.relays().end());
  to.relay.serve = config_.relay();
  to.relay.max_circuits = config_.relay_max_circuits();
  to.relay.max_circuits_per_node = config_.relay_max_circuits_per_node();
  to.relay.bytes_per_second_per_node = config_.relay_bytes_per_second_per_node();
  to.relay.burst_bytes_per_node = std::max(to.relay.bytes_per_second_per_node / 4, 256.0 * 1024);
  const bool aes_gcm = config_.cipher() == "auto";
  crypto::TrustPolicy policy{config_.network_id(), coordinator, crypto::kRoleNode, aes_gcm};
  node_policy_ = policy;
  // The daemon's own certificate passes what its peers check (coordinator
  // signature, network, validity now), or they will refuse every session
  // with it: say so here, where the cause is, not only in their logs.
  const std::int64_t now = UnixSeconds();
  if (Status own = CheckRenewal(*creds, cert, policy, now); !own.ok())
    MURMUR_LOG(kError) << "node " << self << ": certificate '" << cert_path
                       << "' will be refused by every peer: " << own.message()
                       << " (murmur cert issue a new one, then murmur cert reload)";
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
  env_->RegisterDecoders(ArtifactDecoders());
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
  // The address stated in membership names this node's relays, so that
  // peers that cannot dial it go through them (docs/protocol.md 7.2).
  listen_at_ = HostPort{listen.host, transport_->port()};
  advertised_ = FormatHostPort(listen_at_);
  mo.address = FormatMemberAddress(HostPort{listen.host, transport_->port()}, to.relays);
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
  transport_->SetReachabilityHandler([this](Reachability) { UpdateStatedAddress(); });
  // An operator's connection relayed to this daemon (docs/daemon.md "Behind NAT").
  transport_->SetControlCircuitHandler([this](asio::ip::tcp::socket socket, NodeId relay) {
    MURMUR_LOG(kInfo) << "node " << config_.node_id() << ": an operator's connection through relay " << relay;
    control_->Adopt(std::move(socket));
  });
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
    auto parsed = config::ParseJobConfig(*text, DataPath(kJobFile), &warnings);
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
  MURMUR_ASSIGN_OR_RETURN(
      artifacts_,
      ArtifactStore::Open(DataPath("artifacts"),
                          ArtifactLimits{config_.artifact_max_bytes(), config_.artifact_store_max_bytes()}));
  fetcher_ = std::make_unique<ArtifactFetcher>(net(), *artifacts_);

  // The job: the config's, or the one a restart interrupted.
  if (config_.has_job()) {
    exit_after_job_ = true;
    auto planned = PlanJobConfig(config_.job(), self);
    if (!planned.ok()) return planned.status().WithContext("config field 'job'");
    // A completed job ends at once on its final checkpoint; one whose
    // checkpoint is no longer kept is not run again from round 0.
    MURMUR_ASSIGN_OR_RETURN(std::string checkpoint, store_->CheckpointPath(config_.job().job_id()));
    if (store_->Completed(config_.job()) && !std::filesystem::exists(checkpoint))
      return Status::FailedPrecondition("config field 'job': job '" + config_.job().job_id() +
                                        "' already completed on this daemon (DATA_DIR/jobs/completed); give "
                                        "the next job a new job_id");
    return StartJob(*planned, /*submitted=*/false);
  }
  if (state.ok() && last) {
    proto::JobConfig job = *last;
    const std::string name = state->substr(0, state->find('\n'));
    const std::optional<JobState> was = ParseJobState(name);
    if (!was)
      MURMUR_LOG(kWarning) << "node " << self << ": '" << DataPath(kJobStateFile) << "' says '" << name
                           << "', not a job state; job " << job.job_id() << " is kept as stopped";
    // Draining is never written (a drain ends stopped, or running for a
    // shutdown alone); read, it is a drain that never ended: stopped.
    JobState read = was.value_or(JobState::kStopped);
    if (read == JobState::kDraining) read = JobState::kStopped;
    if (read == JobState::kRunning) {  // StartJob moves the lifecycle from idle to running
      MURMUR_LOG(kInfo) << "node " << self << ": resuming job " << job.job_id();
      MURMUR_ASSIGN_OR_RETURN(PlannedJob planned, PlanJobConfig(job, self));
      return StartJob(planned, /*submitted=*/false);
    }
    lifecycle_.Restore(read);
    // A finished or stopped job: keep it for status until the next one.
    // (Built from its checkpoint and ended at once: status shows where it stopped.)
    MURMUR_ASSIGN_OR_RETURN(std::string checkpoint, store_->CheckpointPath(job.job_id()));
    auto planned = PlanJobConfig(job, self);
    auto ended = planned.ok()
                     ? MakeJob(*planned, net(), checkpoint, nullptr, {}, LocalDataOf(config_), Keys())
                     : Result<std::unique_ptr<Job>>(planned.status());
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

Status DaemonImpl::StartJob(const PlannedJob& planned, bool submitted, std::unique_ptr<Job> made) {
  const proto::JobConfig& job = planned.config();
  // Each job has its own checkpoint: a new job starts at round 0, and one
  // submitted again goes on from its own (if its configuration is the same).
  Result<std::unique_ptr<Job>> created = std::move(made);
  if (*created == nullptr) created = BuildJob(planned);
  if (!created.ok()) return created.status();
  if (submitted) {  // the job a restart resumes, once it is known to build (the last one's stays otherwise)
    std::string text;
    google::protobuf::TextFormat::PrintToString(job, &text);
    MURMUR_RETURN_IF_ERROR(crypto::WriteFileAtomic(DataPath(kJobFile), crypto::AsBytes(text), 0644));
  }
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
  lifecycle_.MoveTo(JobState::kRunning);
  job_error_.clear();
  operator_stop_ = false;
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

Result<std::unique_ptr<Job>> DaemonImpl::BuildJob(const PlannedJob& job) {
  MURMUR_RETURN_IF_ERROR(CheckArtifacts(job.config()));
  MURMUR_ASSIGN_OR_RETURN(std::string checkpoint, store_->CheckpointPath(job.config().job_id()));
  return MakeJob(
      job, net(), checkpoint, [this](Job::End how) { OnJobEnd(how); },
      [this](NodeId peer) { return PeerAlive(peer); }, LocalDataOf(config_), Keys());
}

void DaemonImpl::SaveJobState(JobState state) {
  const std::string line = std::string(JobStateName(state)) + "\n";
  Status st = crypto::WriteFileAtomic(DataPath(kJobStateFile), crypto::AsBytes(line), 0644);
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
    lifecycle_.MoveTo(JobState::kDone);
    Status st = store_->MarkCompleted(job_->config().job_id(), job_->rounds_done());
    if (!st.ok()) MURMUR_LOG(kError) << "the record of completed jobs: " << st.ToString();
  } else if (!shutting_down_ || operator_stop_) {
    lifecycle_.MoveTo(JobState::kStopped);
  }  // a shutdown alone leaves it "running" on disk: it resumes at the next start
  if (!exit_after_job_ && (!shutting_down_ || operator_stop_ || how == Job::End::kCompleted)) SaveJobState();
  if (exit_after_job_) return Finish(how == Job::End::kCompleted ? FromSeconds(config_.linger()) : Nanos(0));
  if (shutting_down_) Finish(Nanos(0));
}

void DaemonImpl::BeginDrain(const std::string& why, bool operator_stop) {
  if (!job_ || job_->ended()) return;
  if (operator_stop && !operator_stop_) {
    operator_stop_ = true;
    if (!exit_after_job_) SaveJobState(JobState::kStopped);
  }
  if (lifecycle_.state() == JobState::kDraining) return;
  lifecycle_.MoveTo(JobState::kDraining);
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
  const std::int64_t now = UnixSeconds();
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
                    << (job_ ? job_->config().job_id() + " (" + lifecycle_.name() + ")"
                             : std::string("none"));
  MURMUR_LOG(kInfo) << "node " << config_.node_id() << ": " << CpuFeaturesLine()
                    << (config_.cipher() == "chachapoly" ? " (AES-256-GCM off by the cipher setting)" : "");
  io_.run();
  return Status::Ok();
}

}  // namespace murmur::node
