// The Transport's reachability probes (docs/protocol.md section 7.5,
// docs/daemon.md "Behind NAT"): this node asks a few peers to dial it back
// at the address they know for it, and learns from whether the dial-backs
// reach its listener whether it can be dialled; it serves the same for its
// peers, dialling only the IP address a peer's session comes from, so that
// a probe cannot aim this node at a third party.
#include <algorithm>
#include <string>

#include "core/log.h"
#include "crypto/key_agreement.h"
#include "node/transport/session.h"
#include "node/transport/transport.h"

namespace murmur::node {

namespace {
// A peer is dialled back at most once per this, and this many dial-backs run at once.
constexpr Nanos kProbeServeInterval = std::chrono::seconds(10);
constexpr std::size_t kMaxProbeDials = 4;
// A round waits this long beyond the connect timeout for the answers.
constexpr Nanos kProbeAnswerSlack = std::chrono::seconds(2);
}  // namespace

void Transport::ProbeRound() {
  if (stopped_) return;
  probes_.clear();
  std::vector<NodeId> direct;
  for (const auto& [id, peer] : peers_)
    if (peer.session && peer.session->relay() == kNoNode) direct.push_back(id);
  if (direct.empty()) {  // nobody to ask yet
    probe_timer_->expires_after(std::chrono::seconds(2));
    probe_timer_->async_wait([this](const asio::error_code& ec) {
      if (!ec) ProbeRound();
    });
    return;
  }
  const std::size_t n = std::min(options_.probe_peers, direct.size());
  for (std::size_t i = 0; i < n; ++i) {
    const NodeId peer = direct[(probe_rounds_ + i) % direct.size()];
    RelayToken nonce;
    crypto::FillRandom(nonce);
    probes_[nonce] = Probe{peer};
    ++stats_.probes_sent;
    SendRecord(peer, ProbeRequestRecord(nonce));
  }
  ++probe_rounds_;
  probe_timer_->expires_after(options_.connect_timeout + kProbeAnswerSlack);
  probe_timer_->async_wait([this](const asio::error_code& ec) {
    if (!ec) ConcludeProbes();
  });
}

void Transport::ConcludeProbes() {
  if (stopped_) return;
  const bool confirmed =
      std::any_of(probes_.begin(), probes_.end(), [](const auto& kv) { return kv.second.confirmed; });
  if (!confirmed) {
    std::string why;
    for (const auto& [nonce, p] : probes_) {
      if (!p.answered || p.verdict != ProbeVerdict::kNotReached) continue;
      why += (why.empty() ? "" : "; ") + std::string("node ") + std::to_string(p.peer) + ": " + p.reason;
    }
    if (!why.empty()) SetReachability(Reachability::kUnreachable, why);
  }
  probe_timer_->expires_after(options_.probe_interval);
  probe_timer_->async_wait([this](const asio::error_code& ec) {
    if (!ec) ProbeRound();
  });
}

bool Transport::OnDialBack(const RelayToken& nonce) {
  auto it = probes_.find(nonce);
  if (it == probes_.end()) return false;
  ++stats_.probe_dialbacks;
  it->second.confirmed = true;
  SetReachability(Reachability::kReachable, "dialled back by node " + std::to_string(it->second.peer));
  return true;
}

void Transport::OnProbeResult(NodeId from, const RelayToken& nonce, ProbeVerdict verdict,
                              const std::string& reason) {
  auto it = probes_.find(nonce);
  if (it == probes_.end() || it->second.peer != from || it->second.answered) return;
  it->second.answered = true;
  it->second.verdict = verdict;
  it->second.reason = reason;
  // Every answer in, none confirmed and none still to come: conclude now.
  const bool pending = std::any_of(probes_.begin(), probes_.end(), [](const auto& kv) {
    return !kv.second.answered || (kv.second.verdict == ProbeVerdict::kReached && !kv.second.confirmed);
  });
  if (!pending) {
    probe_timer_->cancel();
    ConcludeProbes();
  }
}

void Transport::OnProbeRequest(NodeId from, const std::string& observed, const RelayToken& nonce) {
  const auto now = std::chrono::steady_clock::now();
  const auto answer = [this, from, nonce](ProbeVerdict v, const std::string& why) {
    SendRecord(from, ProbeResultRecord(nonce, v, why));
  };
  auto last = probe_served_at_.find(from);
  if ((last != probe_served_at_.end() && now - last->second < kProbeServeInterval) ||
      probe_dials_ >= kMaxProbeDials) {
    ++stats_.probes_refused;
    return answer(ProbeVerdict::kNoVerdict, "probed too often: once per 10 s per node, 4 at once");
  }
  const Peer& peer = peers_[from];
  if (!peer.address.has_value()) {
    ++stats_.probes_refused;
    return answer(ProbeVerdict::kNoVerdict, "no address known for node " + std::to_string(from));
  }
  const PeerAddress at = *peer.address;
  const std::string where = at.host + ":" + std::to_string(at.port);
  probe_served_at_[from] = now;
  // Only the IP address the session comes from is dialled: a probe must not
  // aim this node at a third party. A different one means a NAT between.
  if (at.host != observed) {
    ++stats_.probes_refused;
    return answer(ProbeVerdict::kNotReached,
                  "its address " + where + " is not where it connects from (" + observed + "): behind NAT");
  }
  ++stats_.probes_served;
  ++probe_dials_;
  ConnectPreface(
      at, nonce,
      [this, answer, where](asio::ip::tcp::socket) {  // the dial-back's socket closes as it goes
        --probe_dials_;
        answer(ProbeVerdict::kReached, "dialled back at " + where);
      },
      [this, answer, where](const std::string& why) {
        --probe_dials_;
        answer(ProbeVerdict::kNotReached, "dial back to " + where + ": " + why);
      });
}

void Transport::SetReachability(Reachability r, std::string detail) {
  const bool changed = reachability() != r;
  stats_.reachable = static_cast<int>(r);
  reachability_detail_ = std::move(detail);
  if (!changed) return;
  if (reachability_handler_) reachability_handler_(r);
  if (r == Reachability::kReachable) {
    MURMUR_LOG(kInfo) << "node " << options_.self << ": reachable: " << reachability_detail_;
  } else {
    MURMUR_LOG(kWarning) << "node " << options_.self << ": not reachable by its peers ("
                         << reachability_detail_ << ")"
                         << (options_.relays.empty()
                                 ? "; two such daemons meet only through a relay: set `relays`"
                                 : "");
  }
}

}  // namespace murmur::node
