// DaemonImpl: the state of murmurd's node runtime behind Daemon
// (node/daemon.h), implemented in daemon_impl.cc: start-up, jobs, membership
// and stop, then operator requests and /metrics. Internal to node/.
//
// Thread-safety: as Daemon: everything on the io thread, except what the
// Daemon accessors read under mu_.
#pragma once

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "core/faulty_env.h"
#include "crypto/handshake.h"
#include "membership/membership.h"
#include "node/artifacts/fetcher.h"
#include "node/artifacts/messages.h"
#include "node/artifacts/store.h"
#include "node/control/server.h"
#include "node/daemon.h"
#include "node/job/job.h"
#include "node/job/job_router.h"
#include "node/job/job_store.h"
#include "node/job/lifecycle.h"
#include "node/member_keys.h"
#include "node/metrics_server.h"
#include "node/transport/address.h"
#include "node/transport/asio.h"
#include "node/transport/asio_env.h"
#include "node/transport/transport.h"
#include "proto/control.pb.h"

namespace murmur::node {

class DaemonImpl final : public MessageSink, public membership::MembershipObserver {
 public:
  explicit DaemonImpl(proto::NodeConfig config)
      : config_(std::move(config)), signals_(io_), reload_signals_(io_) {}
  ~DaemonImpl() override {
    if (membership_) membership_->Stop();
    if (transport_) transport_->Stop();
    if (metrics_) metrics_->Stop();
    if (control_) control_->Stop();
    io_.stop();
    membership_.reset();
    fetcher_.reset();  // cancels its timers on the Env
    faulty_.reset();   // cancels its timers on the AsioEnv
    env_.reset();      // joins the worker pool before the jobs go
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
  // Reads the certificate file again and, when it passes the renewal checks
  // (node/certificate_reload.h), presents it from now on; else keeps the
  // current one, logs why and counts it. `why` names the trigger in the log.
  Status ReloadCertificate(const std::string& why);
  // Membership messages to the membership, the rest to the router, which
  // hands the running job those with its tag.
  void OnMessage(NodeId from, MessagePtr msg) override {
    if (msg->kind() == membership::kMembershipMessageKind) {
      if (membership_) membership_->OnMessage(from, std::move(msg));
    } else if (msg->kind() == kArtifactRequestKind) {
      ServeArtifact(from, static_cast<const ArtifactRequestMessage&>(*msg));
    } else if (msg->kind() == kArtifactChunkKind) {
      if (fetcher_) fetcher_->OnChunk(from, static_cast<const ArtifactChunkMessage&>(*msg));
    } else {
      router_.OnMessage(from, std::move(msg));
    }
  }
  void OnMemberAlive(const membership::Member& m) override;
  void OnMemberSuspect(const membership::Member& m) override;
  void OnMemberDead(const membership::Member& m) override;
  // The address this daemon states in membership, from its listen address,
  // its relays (configured, or learned when the probes find it not
  // reachable) and whether it offers relaying (relay: true and reachable);
  // a change is announced with a new incarnation (docs/daemon.md "Behind NAT").
  void UpdateStatedAddress();
  void OnRejected(NodeId from, membership::Rejection why) override;
  bool PeerAlive(NodeId peer) const {
    if (!membership_) return true;
    const auto m = membership_->Find(peer);
    return !m || (m->state != membership::MemberState::kDead && m->state != membership::MemberState::kLeft);
  }

  proto::NodeConfig config_;
  asio::io_context io_;
  asio::signal_set signals_;
  asio::signal_set reload_signals_;  // SIGHUP: reload the certificate
  std::string cert_path_;
  crypto::TrustPolicy node_policy_;             // what peers' certificates must satisfy; also checks renewals
  std::atomic<std::uint64_t> cert_reloads_{0};  // renewed certificates taken
  std::atomic<std::uint64_t> cert_reload_failures_{0};  // reloads refused (the old certificate stays)
  std::unique_ptr<AsioEnv> env_;
  // Fault injection (config field 'fault_injection', engine/faults.h):
  // when set, membership and jobs send through faulty_, which applies fault_plan_.
  FaultPlan fault_plan_;
  std::unique_ptr<FaultyEnv> faulty_;
  proto::FaultConfig faults_;  // what fault_plan_ holds now
  std::unique_ptr<Transport> transport_;
  std::unique_ptr<MetricsServer> metrics_;
  std::unique_ptr<ControlServer> control_;
  std::string advertised_;
  HostPort listen_at_;                  // the peer port's host and bound port
  std::vector<NodeId> learned_relays_;  // relays taken from membership (no `relays` configured)  // HOST:PORT
                                        // of the peer port, as membership states it (without relays)
  std::unique_ptr<CertifiedSigner> signer_;
  std::unique_ptr<crypto::Identity> identity_;  // signs SecAgg+ keys of federated jobs
  std::unique_ptr<MemberKeys> member_keys_;
  std::unique_ptr<membership::Membership> membership_;
  // Job messages to the running job when their tag is its own (node/job/job_router.h).
  JobRouter router_{config_.node_id(), [this] { return env_ ? env_->Now() : Nanos(0); }};
  std::unique_ptr<Job> job_;                   // the current or last job
  std::vector<std::unique_ptr<Job>> retired_;  // ended jobs; callbacks may still name them
  JobLifecycle lifecycle_;                     // the current or last job's state (node/job/lifecycle.h)
  std::unique_ptr<JobStore> store_;            // the jobs' checkpoints and the completed ones (set by Start)
  std::unique_ptr<ArtifactStore> artifacts_;   // the files jobs need, by content (set by Start)
  std::unique_ptr<ArtifactFetcher> fetcher_;   // fetches of artifacts from other daemons (on the io thread)
  // Artifact chunks served to each peer: a token bucket of kServeChunksPerSecond.
  struct ServeBudget {
    double tokens = 0;
    Nanos at{0};
  };
  std::map<NodeId, ServeBudget> serve_budget_;
  std::atomic<std::uint64_t> chunks_served_{0}, chunk_requests_refused_{0};
  void ServeArtifact(NodeId from, const ArtifactRequestMessage& request);
  std::string job_error_;
  // The job a `prepare` holds until its commit, abort or deadline
  // (proto/control.proto, JobPrepare).
  struct Prepared {
    PlannedJob job;
    std::chrono::steady_clock::time_point deadline;
    std::unique_ptr<Job> made;  // built at prepare (data, model, checkpoint checked), started at commit
  };
  std::optional<Prepared> prepared_;
  asio::steady_timer drain_timer_{io_};
  bool exit_after_job_ = false;  // the config's job: the daemon exits when it ends
  bool operator_stop_ = false;   // the running job drains on an operator's stop (recorded as stopped)
  bool shutting_down_ = false;
  bool done_ = false;
  mutable std::mutex mu_;  // guards job_ pointer swaps against the accessors

 private:
  // The Env that membership and jobs send through.
  Env& net() { return faulty_ ? static_cast<Env&>(*faulty_) : static_cast<Env&>(*env_); }
  std::string DataPath(const char* name) const { return config_.data_dir() + "/" + name; }
  // The keys a job may use (JobKeys, node/job/job.h): this node's identity,
  // its peers' certificate keys: the one presented on a session, else the one
  // membership verified a member's statement with (its certificate, checked
  // against the coordinator, or its pinned key), so that SecAgg+ clients
  // check each other's keys without a session between them (one behind NAT).
  JobKeys Keys() const {
    return {identity_.get(), [this](NodeId peer) -> std::optional<crypto::SignPublicKey> {
              if (auto key = transport_->PeerKey(peer)) return key;
              if (!membership_) return std::nullopt;
              std::optional<membership::Member> m = membership_->Find(peer);
              return m ? m->key : std::nullopt;
            }};
  }
  // Starts `job` from its checkpoint, if it has one (`made`: the job as a
  // prepare built it); a `submitted` job (murmur job submit) is written to
  // DATA_DIR/job.txt for a restart once it is built.
  Status StartJob(const PlannedJob& job, bool submitted, std::unique_ptr<Job> made = nullptr);
  // `job` built to run here from its checkpoint, not started.
  Result<std::unique_ptr<Job>> BuildJob(const PlannedJob& job);
  void WarnLegacyCertificate(const std::string& path) const;
  void OnJobEnd(Job::End how);
  void SaveJobState(JobState state);
  void SaveJobState() { SaveJobState(lifecycle_.state()); }
  // Drains the running job after its round; an `operator_stop` is written
  // to disk as stopped at once, so that a restart, even after a crash in
  // the drain, does not resume the job.
  void BeginDrain(const std::string& why, bool operator_stop = false);
  void Shutdown(const std::string& why);
  void Finish(Nanos linger);
  proto::ControlResponse OnControl(const proto::ControlRequest& request, const crypto::PeerInfo& from);
  // Why `job` may not start now ("" when it may): a submit's, a prepare's
  // and a commit's checks. A job not planned yet (`planned` empty: a submit
  // or a prepare) is planned here (PlanJobConfig), once per submission; a
  // commit brings its prepare's plan.
  std::string RefuseSubmission(const proto::JobConfig& job, std::optional<PlannedJob>& planned);
  proto::ControlResponse OnArtifact(const proto::ControlRequest& request);
  // Every artifact the job lists is in the store and verifies.
  Status CheckArtifacts(const proto::JobConfig& job);
  proto::ControlResponse Submit(const proto::JobConfig& job, std::optional<PlannedJob> planned = {},
                                std::unique_ptr<Job> made = nullptr);
  proto::ControlResponse Prepare(const proto::JobConfig& job);
  proto::ControlResponse Commit(const std::string& job_id);
  proto::ControlResponse SetFaults(const proto::FaultConfig& faults);
  proto::ControlResponse ReloadCertificateRequest();
  void WaitReloadSignal();
  proto::JobStatus JobStatus() const;
  std::string RenderMetrics() const;
};

}  // namespace murmur::node
