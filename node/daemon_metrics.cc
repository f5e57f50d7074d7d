// DaemonImpl::RenderMetrics: the Prometheus exposition of `/metrics` and
// `murmur metrics` (docs/daemon.md "Metrics"), apart from the daemon's
// lifecycle and control handling in daemon_impl.cc.
#include "node/daemon_impl.h"

#include <limits>

namespace murmur::node {

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
  out += PrometheusMetric("murmur_peers_unconnected", "gauge",
                          "Peers with a known address and no session for 8 s or more (the log says why).",
                          static_cast<double>(s.peers_unconnected.load()));
  out += PrometheusMetric("murmur_reverse_dials_total", "counter",
                          "Dials to a peer with a smaller id that had not connected (it may be behind NAT).",
                          static_cast<double>(s.reverse_dials.load()));
  out += PrometheusMetric("murmur_sessions_duplicate_total", "counter",
                          "Second sessions with a peer (dialled from both ends at once), closed.",
                          static_cast<double>(s.sessions_duplicate.load()));
  {
    const RelayStats& r = transport_->relay().stats();
    struct Counter {
      const char* name;
      const char* help;
      std::uint64_t value;
    };
    const Counter counters[] = {
        {"murmur_relay_dials_total",
         "Circuits this node asked a relay for (its direct dial to the peer failed).", s.relay_dials.load()},
        {"murmur_relay_refusals_total", "Of them, refused by the relay (the log and murmur peers say why).",
         s.relay_refusals.load()},
        {"murmur_relay_invites_total", "Relay invitations this node answered by dialling its relay.",
         s.relay_invites.load()},
        {"murmur_relay_invites_refused_total",
         "Relay invitations not answered (not from a relay of this node, "
         "or over the bound).",
         s.relay_invites_refused.load()},
        {"murmur_relayed_sessions_total", "Sessions with peers that came up through a relay.",
         s.relayed_sessions.load()},
        {"murmur_relayed_bytes_sent_total", "Bytes this node wrote on sessions through a relay.",
         s.relayed_bytes_sent.load()},
        {"murmur_relayed_bytes_received_total", "Bytes this node read on sessions through a relay.",
         s.relayed_bytes_received.load()},
        {"murmur_relay_circuits_total", "Circuits this node relayed (both ends came in).",
         r.circuits_spliced.load()},
        {"murmur_relay_circuits_refused_total",
         "Circuits this node refused to relay (not a relay, no session "
         "with the target, or a bound).",
         r.circuits_refused.load()},
        {"murmur_relay_circuits_unpaired_total", "Circuits dropped because an end did not come within 10 s.",
         r.circuits_unpaired.load()},
        {"murmur_relay_bytes_total", "Bytes this node forwarded for others, both directions (ciphertext).",
         r.bytes_forwarded.load()},
        {"murmur_relay_prefaces_unknown_total",
         "Connections to this relay whose token no circuit held, closed.", r.prefaces_unknown.load()},
        {"murmur_reachability_probes_total",
         "Reachability probes this node sent (peers asked to dial it back).", s.probes_sent.load()},
        {"murmur_reachability_dialbacks_total",
         "Dial-backs that reached this node with a probe nonce of its own.", s.probe_dialbacks.load()},
        {"murmur_reachability_probes_served_total", "Dial-backs this node made for its peers' probes.",
         s.probes_served.load()},
        {"murmur_reachability_probes_refused_total",
         "Peers' probes answered without a dial (rate, no address, an address not where the peer connects "
         "from).",
         s.probes_refused.load()},
        {"murmur_relay_rate_limited_total", "Relayed reads held back for a node's bytes-per-second bound.",
         r.rate_limited_waits.load()},
    };
    for (const Counter& c : counters)
      out += PrometheusMetric(c.name, "counter", c.help, static_cast<double>(c.value));
    out += PrometheusMetric(
        "murmur_reachable", "gauge",
        "1 when the last probe round found this node dialable, 0 when not, -1 before one did.",
        static_cast<double>(s.reachable.load()));
    out += PrometheusMetric("murmur_relay_circuits", "gauge",
                            "Circuits this node relays now (spliced, or waiting for an end).",
                            static_cast<double>(r.circuits_open.load()));
  }
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
  {
    std::vector<std::pair<std::string, double>> refused;
    for (std::size_t k = 0; k < kRefusalKinds; ++k) {
      const auto why = static_cast<Refusal>(k);
      refused.emplace_back(RefusalName(why), static_cast<double>(env_->refused(why)));
    }
    out += PrometheusLabeled("murmur_updates_refused_total", "counter",
                             "Decoded messages refused before use, by reason (docs/security.md, Insiders).",
                             "reason", refused);
  }
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
  std::vector<std::pair<std::string, double>> rtt;
  if (membership_) {
    for (const membership::Member& m : membership_->Members())
      if (m.rtt > Nanos(0))
        rtt.emplace_back(std::to_string(m.id), std::chrono::duration<double>(m.rtt).count());
  }
  out += PrometheusLabeled("murmur_peer_rtt_seconds", "gauge",
                           "Smoothed round trip of direct SWIM probes to each member (RFC 6298 SRTT).",
                           "peer", rtt);
  std::vector<std::pair<std::string, double>> throughput;
  for (const auto& [id, t] : transport_->Throughputs())
    throughput.emplace_back(std::to_string(id), t.bytes_per_second);
  out += PrometheusLabeled("murmur_peer_throughput_bytes_per_second", "gauge",
                           "Smoothed throughput of each peer's large messages to this node (docs/daemon.md).",
                           "peer", throughput);
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
  out +=
      PrometheusMetric("murmur_train_loss", "gauge", "Mean training loss of the last round (NaN: none yet).",
                       job ? job_->loss() : std::numeric_limits<double>::quiet_NaN());
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
  out += PrometheusMetric("murmur_artifact_bytes_received_total", "counter",
                          "Artifact chunk bytes stored, from operators and other daemons, since the daemon "
                          "started (docs/daemon.md "
                          "\"Artifacts\").",
                          static_cast<double>(artifacts_->bytes_received()));
  out += PrometheusMetric("murmur_artifacts_stored_total", "counter",
                          "Artifacts received whole and verified since the daemon started.",
                          static_cast<double>(artifacts_->files_completed()));
  out += PrometheusMetric("murmur_artifact_refusals_total", "counter",
                          "Artifact offers, chunks and stored files refused: bad manifests, altered or "
                          "out-of-order chunks, bounds, stored files whose bytes changed.",
                          static_cast<double>(artifacts_->refusals()));
  out += PrometheusMetric("murmur_artifact_bytes_fetched_total", "counter",
                          "Artifact chunk bytes fetched from other daemons.",
                          static_cast<double>(fetcher_->bytes_fetched()));
  out += PrometheusMetric("murmur_artifact_chunks_served_total", "counter",
                          "Artifact chunks sent to other daemons' fetches.",
                          static_cast<double>(chunks_served_));
  out += PrometheusMetric("murmur_artifact_store_bytes", "gauge",
                          "Bytes of the artifact store: complete files and the full size of partial ones.",
                          static_cast<double>(artifacts_->bytes_used()));
  out += PrometheusMetric("murmur_checkpoints_written_total", "counter",
                          "Checkpoints written by the current job.",
                          static_cast<double>(job ? job_->checkpoints() : 0));
  return out;
}

}  // namespace murmur::node
