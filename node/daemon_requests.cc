// DaemonImpl's answers to operators (node/control/server.h) and its
// Prometheus metrics.
#include <map>

#include "core/log.h"
#include "engine/faults.h"
#include "node/certificate_reload.h"
#include "node/daemon_impl.h"

namespace murmur::node {

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
