// The Transport's reachability bookkeeping (node/transport/transport.h, "Who
// dials"; docs/daemon.md "Behind NAT"): the first dial of a peer, or the
// wait for its own before this node dials it; why a peer has no session;
// and the once-a-second report of peers unconnected past the report delay.
#include <chrono>
#include <string>

#include "core/log.h"
#include "node/transport/transport.h"

namespace murmur::node {

void Transport::WantSession(NodeId id) {
  Peer& peer = peers_[id];
  if (peer.session || peer.dialing) return;
  if (peer.unconnected_since == std::chrono::steady_clock::time_point{}) {
    peer.unconnected_since = std::chrono::steady_clock::now();
    peer.reported = false;
  }
  if (Dials(id)) return Dial(id);
  if (peer.why.empty()) peer.why = "waiting for it to dial (the smaller id dials first)";
  RedialAfter(id, options_.reverse_dial_after);
}

void Transport::Unreached(NodeId id, std::string why) {
  auto it = peers_.find(id);
  if (it == peers_.end() || it->second.session) return;
  it->second.why = std::move(why);
}

void Transport::ReportUnconnected() {
  if (stopped_) return;
  const auto now = std::chrono::steady_clock::now();
  std::uint64_t unconnected = 0;
  for (auto& [id, peer] : peers_) {
    if (!peer.unconnected()) continue;
    const Nanos out = now - peer.unconnected_since;
    if (out < options_.unconnected_report_after) continue;
    ++unconnected;
    if (peer.reported) continue;
    peer.reported = true;
    MURMUR_LOG(kWarning) << "node " << options_.self << ": no session with node " << id << " at "
                         << peer.address->host << ":" << peer.address->port << " for "
                         << std::chrono::duration_cast<std::chrono::seconds>(out).count()
                         << " s: " << peer.reason();
  }
  stats_.peers_unconnected = unconnected;
  report_timer_.expires_after(std::chrono::seconds(1));
  report_timer_.async_wait([this](const asio::error_code& ec) {
    if (!ec) ReportUnconnected();
  });
}

std::optional<PeerOutage> Transport::Unconnected(NodeId id) const {
  auto it = peers_.find(id);
  if (it == peers_.end() || !it->second.unconnected()) return std::nullopt;
  return PeerOutage{it->second.reason(), std::chrono::steady_clock::now() - it->second.unconnected_since};
}

std::string Transport::ConnectFailure(const asio::error_code& ec) const {
  if (ec == asio::error::connection_refused) return "refused (nothing listens there)";
  if (ec == asio::error::operation_aborted)  // the connect timer closed the socket
    return "timed out (no answer within " +
           std::to_string(
               std::chrono::duration_cast<std::chrono::milliseconds>(options_.connect_timeout).count()) +
           " ms)";
  if (ec == asio::error::host_unreachable || ec == asio::error::network_unreachable)
    return "unreachable (" + ec.message() + ")";
  return "connect failed (" + ec.message() + ")";
}

}  // namespace murmur::node
