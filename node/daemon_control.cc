// DaemonImpl's answers to operators (node/control/server.h): job submission
// (prepare, commit), status, stop, peers, faults and certificate reloads,
// apart from the daemon's lifecycle in daemon_impl.cc.
#include <chrono>
#include <cmath>
#include <map>
#include <string>

#include "core/log.h"
#include "crypto/bytes.h"
#include "engine/faults.h"
#include "node/certificate_reload.h"
#include "node/config.h"
#include "node/daemon_impl.h"

#include "crypto/hmac.h"
#include "node/job/job_message.h"
#include "node/job/job_store.h"

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
      if (prepared_ && prepared_->job.config().job_id() == request.abort().job_id()) prepared_.reset();
      r.set_ok(true);
      break;
    case proto::ControlRequest::kStop:
      // Nothing running is nothing to stop: the reply says the job's state.
      // A stop that names a job this daemon never ran is refused, so that a
      // mistyped id does not read as a stop that worked.
      if (!job_ || job_->ended()) {
        if (request.stop().has_job_id() && (!job_ || request.stop().job_id() != job_->config().job_id())) {
          r = Refuse("no job '" + request.stop().job_id() + "' here: nothing is running" +
                     (job_
                          ? " (the last job, '" + job_->config().job_id() + "', is " + lifecycle_.name() + ")"
                          : ""));
          break;
        }
        r.set_ok(true);
        break;
      }
      if (request.stop().has_job_id() && request.stop().job_id() != job_->config().job_id()) {
        r = Refuse("the running job is '" + job_->config().job_id() + "', not '" + request.stop().job_id() +
                   "'");
        break;
      }
      BeginDrain("operator stop", /*operator_stop=*/true);
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
            s.set_rtt_ms(std::chrono::duration<double, std::milli>(m.rtt).count());
          }
        }
        for (auto& [id, s] : peers) {
          s.set_connected(transport_->IsConnected(id));
          if (auto relay = transport_->RelayOf(id)) s.set_relay(*relay);
          if (auto out = transport_->Unconnected(id)) {
            s.set_unconnected(out->reason);
            s.set_unconnected_s(std::chrono::duration<double>(out->duration).count());
          }
          if (auto t = transport_->Throughput(id)) s.set_mbps_in(t->bytes_per_second * 8 / 1e6);
          *r.add_peers() = s;
        }
        {
          const Reachability reach = transport_->reachability();
          r.set_reachability(std::string(reach == Reachability::kReachable     ? "reachable: "
                                         : reach == Reachability::kUnreachable ? "not reachable: "
                                                                               : "unknown: ") +
                             transport_->reachability_detail());
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
    case proto::ControlRequest::kArtifactOffer:
    case proto::ControlRequest::kArtifactPut:
    case proto::ControlRequest::kArtifactFetch: r = OnArtifact(request); break;
    case proto::ControlRequest::kControlRelay: {
      const NodeId target = request.control_relay().node();
      auto token = transport_->relay().OpenControl(target, transport_->IsConnected(target));
      if (!token.ok()) {
        r = Refuse("no relay to node " + std::to_string(target) + ": " + token.status().message());
        break;
      }
      r.set_ok(true);
      r.mutable_relay()->set_token(token->data(), token->size());
      r.mutable_relay()->set_address(advertised_);
      break;
    }
    default: r = Refuse("unknown request"); break;
  }
  // Every reply, a refusal too, says which node answered and where its job stands.
  r.set_node_id(config_.node_id());
  *r.mutable_job() = JobStatus();
  if (request.has_status() && request.status().model_digest() && job_)
    r.mutable_job()->set_model_blake2b(crypto::ModelBlake2b(job_->params()));
  return r;
}

std::string DaemonImpl::RefuseSubmission(const proto::JobConfig& job, std::optional<PlannedJob>& planned) {
  if (job_ && !job_->ended())
    return lifecycle_.state() == JobState::kDraining
               ? "job '" + job_->config().job_id() +
                     "' is draining (it stops after its current round); submit again once it has stopped"
               : "job '" + job_->config().job_id() + "' is " + lifecycle_.name() +
                     "; stop it first (murmur job stop)";
  if (shutting_down_) return "the daemon is shutting down";
  if (prepared_ && std::chrono::steady_clock::now() >= prepared_->deadline) prepared_.reset();
  const proto::JobConfig* held = prepared_ ? &prepared_->job.config() : nullptr;
  if (held != nullptr && (held->job_id() != job.job_id() || JobTag(*held) != JobTag(job)))
    return "job '" + held->job_id() + "' is prepared here by another submission" +
           (held->job_id() == job.job_id() ? " with another configuration" : "") +
           " (it is committed, aborted or dropped within " + std::to_string(kPrepareHoldSeconds) + " s)";
  if (!planned) {
    auto made = PlanJobConfig(job, config_.node_id());
    if (!made.ok()) return made.status().ToString();
    planned.emplace(std::move(made).value());
  }
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

proto::ControlResponse DaemonImpl::Submit(const proto::JobConfig& job, std::optional<PlannedJob> planned,
                                          std::unique_ptr<Job> made) {
  if (std::string why = RefuseSubmission(job, planned); !why.empty()) return Refuse(std::move(why));
  prepared_.reset();
  Status st = StartJob(*planned, /*submitted=*/true, std::move(made));
  if (!st.ok()) {
    MURMUR_LOG(kWarning) << "node " << config_.node_id() << ": job " << job.job_id()
                         << " did not start: " << st.ToString();
    if (!job_) {  // nothing else to show; a last job's status stays its own
      lifecycle_.MoveTo(JobState::kFailed);
      job_error_ = st.ToString();
    }
    return Refuse(st.ToString());
  }
  proto::ControlResponse r;
  r.set_ok(true);
  return r;
}

proto::ControlResponse DaemonImpl::Prepare(const proto::JobConfig& job) {
  std::optional<PlannedJob> planned;
  if (std::string why = RefuseSubmission(job, planned); !why.empty()) return Refuse(std::move(why));
  // Built as it would start (its data, model, topology and checkpoint
  // checked), so that what would fail fails here, before any daemon starts.
  auto made = BuildJob(*planned);
  if (!made.ok()) return Refuse(made.status().ToString());
  prepared_ = Prepared{std::move(*planned),
                       std::chrono::steady_clock::now() + std::chrono::seconds(kPrepareHoldSeconds),
                       std::move(made).value()};
  MURMUR_LOG(kInfo) << "node " << config_.node_id() << ": job " << job.job_id() << " prepared";
  proto::ControlResponse r;
  r.set_ok(true);
  return r;
}

proto::ControlResponse DaemonImpl::Commit(const std::string& job_id) {
  if (prepared_ && std::chrono::steady_clock::now() >= prepared_->deadline) prepared_.reset();
  if (!prepared_ || prepared_->job.config().job_id() != job_id) {
    // Two operators submitting the same job at once both prepare it (the
    // second preparation, of the same configuration, replaces the first)
    // and the first commit starts it: the second finds it running, which is
    // what a commit asks for. A refusal here would make its submitter stop
    // the daemons it did start, and so the job both wanted.
    if (job_ && !job_->ended() && job_->config().job_id() == job_id) {
      MURMUR_LOG(kInfo) << "node " << config_.node_id() << ": job " << job_id
                        << " committed again (another submission of it committed first)";
      proto::ControlResponse r;
      r.set_ok(true);
      return r;
    }
    return Refuse("no job '" + job_id + "' is prepared here (a prepared job is dropped after " +
                  std::to_string(kPrepareHoldSeconds) + " s without its commit)");
  }
  PlannedJob job = std::move(prepared_->job);
  std::unique_ptr<Job> made = std::move(prepared_->made);
  prepared_.reset();
  const proto::JobConfig config = job.config();
  return Submit(config, std::move(job), std::move(made));
}

proto::ControlResponse DaemonImpl::OnArtifact(const proto::ControlRequest& request) {
  Result<proto::ArtifactState> state = Status::Internal("no artifact request");
  if (request.has_artifact_offer()) {
    const proto::ArtifactOffer& o = request.artifact_offer();
    state = artifacts_->Offer(ManifestOf(o));
    if (state.ok())
      MURMUR_LOG(kInfo) << "node " << config_.node_id() << ": artifact " << DescribeArtifact(o.artifact())
                        << " offered: "
                        << (state->complete() ? "here already"
                                              : "holding " + std::to_string(state->chunks_have()) + " of " +
                                                    std::to_string(state->chunks_total()) + " chunks");
  } else if (request.has_artifact_fetch()) {
    const proto::ArtifactFetch& f = request.artifact_fetch();
    std::vector<NodeId> sources(f.sources().begin(), f.sources().end());
    if (f.has_offer())
      state = fetcher_->Fetch(ManifestOf(f.offer()), std::move(sources));
    else
      state = fetcher_->Update(f.blake2b(), std::move(sources));
  } else {
    const proto::ArtifactPut& p = request.artifact_put();
    state = artifacts_->Put(p.blake2b(), p.index(), crypto::AsBytes(p.data()));
    if (state.ok() && state->complete())
      MURMUR_LOG(kInfo) << "node " << config_.node_id() << ": artifact " << p.blake2b().substr(0, 16)
                        << "... stored and verified";
  }
  if (!state.ok()) {
    MURMUR_LOG(kWarning) << "node " << config_.node_id() << ": " << state.status().ToString();
    return Refuse(state.status().ToString());
  }
  proto::ControlResponse r;
  r.set_ok(true);
  *r.mutable_artifact() = *state;
  return r;
}

void DaemonImpl::ServeArtifact(NodeId from, const ArtifactRequestMessage& request) {
  // At most kServeChunksPerSecond chunks a second to one peer (a burst of
  // kServeChunkBurst): a request asks for up to 8 chunks of 512 KiB, so the
  // transport's per-address message budget alone would let one peer make
  // this daemon send gigabytes a second.
  constexpr double kServeChunksPerSecond = 256, kServeChunkBurst = 64;
  ServeBudget& b = serve_budget_[from];
  const Nanos now = env_->Now();
  if (b.at == Nanos(0)) b.tokens = kServeChunkBurst;
  b.tokens = std::min(kServeChunkBurst,
                      b.tokens + kServeChunksPerSecond * std::chrono::duration<double>(now - b.at).count());
  b.at = now;
  const std::string name = HashHex(request.hash());
  for (std::uint32_t i = 0; i < request.count(); ++i) {
    if (b.tokens < 1) {
      ++chunk_requests_refused_;  // the fetcher asks again after its stall
      return;
    }
    b.tokens -= 1;
    auto chunk = artifacts_->ReadChunk(name, request.index() + i, request.chunk_bytes());
    if (!chunk.ok() && chunk.status().code() == StatusCode::kOutOfRange) return;
    net().Send(from,
               std::make_shared<ArtifactChunkMessage>(request.hash(), request.index() + i,
                                                      chunk.ok() ? std::move(chunk).value() : std::string()));
    if (!chunk.ok()) return;  // "no complete copy", once
    ++chunks_served_;
  }
}

Status DaemonImpl::CheckArtifacts(const proto::JobConfig& job) {
  for (const proto::Artifact& a : job.artifacts()) {
    MURMUR_RETURN_IF_ERROR(CheckArtifact(a).WithContext("job field 'artifacts'"));
    if (artifacts_->PathOf(a.blake2b()).empty())
      return Status::FailedPrecondition("artifact " + DescribeArtifact(a) +
                                        " is not in this daemon's store: murmur job submit offers the "
                                        "operator's copy before it prepares the job (docs/daemon.md "
                                        "\"Artifacts\")");
    MURMUR_RETURN_IF_ERROR(artifacts_->Verify(a));
  }
  return Status::Ok();
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
  s.set_state(lifecycle_.name());
  if (!job_error_.empty()) s.set_error(job_error_);
  if (!job_) return s;
  s.set_job_id(job_->config().job_id());
  s.set_algorithm(job_->config().spec().algorithm());
  s.set_role(job_->role());
  s.set_topology(job_->config().spec().topology());
  s.set_owner_tag(OwnerTag(job_->config()));
  s.set_rounds_done(job_->rounds_done());
  s.set_epsilon(job_->epsilon());  // after rounds_done: at least that round's
  s.set_rounds_total(job_->config().spec().rounds());
  s.set_test_accuracy(job_->accuracy());
  if (std::isfinite(job_->loss())) s.set_train_loss(job_->loss());  // unset: not known yet
  if (!job_->ended())
    for (NodeId n : job_->waiting_for()) s.add_waiting_for(n);
  if (job_error_.empty()) {
    const std::string warning = job_->warning();
    if (!warning.empty()) s.set_error(warning);
  }
  return s;
}

}  // namespace murmur::node
