// Transport's part in handling misbehaving peers (node/transport/transport.h,
// "Misbehaving peers"; the rules and their scores are node/transport/peer_scoring.h):
// offences booked against a node or an address, graylisting, and the
// per-address message rate.
#include <chrono>
#include <string>

#include "core/log.h"
#include "node/transport/session.h"
#include "node/transport/transport.h"

namespace murmur::node {

void Transport::ReportMisbehaviour(NodeId peer, Offence offence) {
  if (stopped_ || peer == kNoNode) return;
  ++stats_.offences;
  MURMUR_LOG(kWarning) << "node " << options_.self << ": " << OffenceName(offence) << " from node " << peer;
  if (scores_.Penalize(peer, offence, std::chrono::steady_clock::now())) OnGraylisted(peer);
}

bool Transport::IsGraylisted(NodeId peer) const {
  return scores_.IsGraylisted(peer, std::chrono::steady_clock::now());
}

double Transport::Score(NodeId peer) const { return scores_.Score(peer, std::chrono::steady_clock::now()); }

void Transport::OnGraylisted(NodeId peer_id) {
  ++stats_.graylistings;
  const Nanos term = scores_.GraylistRemaining(peer_id, std::chrono::steady_clock::now());
  MURMUR_LOG(kWarning) << "node " << options_.self << ": node " << peer_id << " graylisted for "
                       << std::chrono::duration_cast<std::chrono::seconds>(term).count() << " s";
  auto it = peers_.find(peer_id);
  if (it != peers_.end() && it->second.session) {
    auto session = it->second.session;  // Close calls OnClosed, which resets it
    session->Close(Status::PermissionDenied("node " + std::to_string(peer_id) + " graylisted"));
  }
}

void Transport::OnSessionFailure(NodeId peer, const std::string& address, bool in_handshake,
                                 const Status& why) {
  if (stopped_) return;
  const auto now = std::chrono::steady_clock::now();
  ++stats_.offences;
  if (peer == kNoNode) {
    if (address.empty()) return;
    const Offence o = in_handshake ? Offence::kHandshakeFailure : Offence::kProtocolViolation;
    if (scores_.Penalize(address, o, now)) {
      ++stats_.graylistings;
      MURMUR_LOG(kWarning) << "address " << address << " graylisted after " << OffenceName(o);
    }
    return;
  }
  const Offence o =
      why.code() == StatusCode::kUnauthenticated ? Offence::kBadSignature : Offence::kProtocolViolation;
  if (scores_.Penalize(peer, o, now)) OnGraylisted(peer);
}

bool Transport::AdmitMessage(NodeId peer, const std::string& address) {
  const auto now = std::chrono::steady_clock::now();
  if (scores_.IsGraylisted(peer, now)) {
    ++stats_.messages_dropped_graylisted;
    return false;
  }
  if (!scores_.AllowMessage(address, now)) {
    ++stats_.messages_rate_limited;
    WarnRateLimited(peer, address, now);
    return false;
  }
  return true;
}

void Transport::WarnRateLimited(NodeId peer, const std::string& address,
                                std::chrono::steady_clock::time_point now) {
  if (now < next_rate_warning_) return;
  next_rate_warning_ = now + std::chrono::seconds(10);
  MURMUR_LOG(kWarning) << "node " << options_.self << ": a message of node " << peer << " from " << address
                       << " was skipped: the address is over its rate of "
                       << options_.scoring.messages_per_second << " messages/s (burst "
                       << options_.scoring.message_burst << "; " << stats_.messages_rate_limited.load()
                       << " skipped so far). Daemons that share one address (a NAT, or loopback) need "
                          "message_rate_per_address and message_burst_per_address above their combined "
                          "message rate";
}

}  // namespace murmur::node
