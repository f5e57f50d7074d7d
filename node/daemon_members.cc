// DaemonImpl's membership callbacks (node/daemon_impl.h): a member's stated
// address becomes a transport peer, and the address this daemon states
// follows its reachability and the relays it offers or learns.
#include <algorithm>
#include <optional>
#include <utility>
#include <vector>

#include "core/log.h"
#include "crypto/identity.h"
#include "node/daemon_impl.h"
#include "node/transport/address.h"

namespace murmur::node {

void DaemonImpl::OnMemberAlive(const membership::Member& m) {
  MURMUR_LOG(kInfo) << "node " << config_.node_id() << ": member " << m.id << " alive (incarnation "
                    << m.incarnation << ", " << m.address << ")";
  auto stated = ParseMemberAddress(m.address);
  if (stated.ok()) {
    // The address is the member's own signed word; who answers there must
    // still present a certificate for that node id. No key is pinned: the
    // coordinator may have certified a new one for it since (a re-keyed
    // node). A configured peer keeps its configured address and key, and
    // takes the relays it states.
    PeerAddress pa{m.id, stated->at.host, stated->at.port, std::nullopt, stated->relays};
    for (const auto& p : config_.peers()) {
      if (p.id() != m.id) continue;
      auto hp = ParseHostPort(p.address());
      if (hp.ok()) {
        pa.host = hp->host;
        pa.port = hp->port;
      }
      if (p.has_public_key()) {
        auto key = crypto::ParsePublicKeyText(p.public_key());
        if (key.ok()) pa.key = *key;
      }
    }
    transport_->AddPeer(pa);
  }
  UpdateStatedAddress();
  if (job_ && !job_->ended()) job_->PeersChanged();
}

namespace {
// Relays a daemon behind NAT learns from membership (NodeConfig.learn_relays).
constexpr std::size_t kLearnedRelays = 2;
}  // namespace

void DaemonImpl::UpdateStatedAddress() {
  const bool learns = config_.relays_size() == 0 && config_.learn_relays();
  if (!membership_ || (!learns && !config_.relay())) return;  // the stated address never changes
  const Reachability reach = transport_->reachability();
  const bool offers = config_.relay() && reach == Reachability::kReachable;
  std::vector<NodeId> relays(config_.relays().begin(), config_.relays().end());
  if (learns && reach == Reachability::kUnreachable) {
    // Members offering relaying, nearest first (measured round trip; the
    // unmeasured last, by id). Relays already taken stay while they offer.
    std::vector<std::pair<Nanos, NodeId>> offering;
    for (const membership::Member& m : membership_->Members()) {
      if (m.state != membership::MemberState::kAlive) continue;
      auto a = ParseMemberAddress(m.address);
      if (a.ok() && a->offers_relay) offering.emplace_back(m.rtt > Nanos(0) ? m.rtt : Nanos::max(), m.id);
    }
    std::sort(offering.begin(), offering.end());
    relays.clear();
    for (NodeId r : learned_relays_)
      if (std::any_of(offering.begin(), offering.end(), [r](const auto& o) { return o.second == r; }))
        relays.push_back(r);
    for (const auto& [rtt, id] : offering) {
      if (relays.size() >= kLearnedRelays) break;
      if (std::find(relays.begin(), relays.end(), id) == relays.end()) relays.push_back(id);
    }
  }
  if (learns) learned_relays_ = relays;
  const std::string address = FormatMemberAddress(listen_at_, relays, offers);
  if (address == membership_->address()) return;
  transport_->SetRelays(relays);
  MURMUR_LOG(kInfo) << "node " << config_.node_id() << ": states its address as " << address
                    << (learns && !relays.empty() ? " (relays learned from membership)" : "")
                    << (offers ? " (offers relaying)" : "");
  if (Status st = membership_->SetAddress(address); !st.ok())
    MURMUR_LOG(kWarning) << "node " << config_.node_id() << ": " << st.ToString();
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
  UpdateStatedAddress();  // a learned relay that died is replaced
  if (job_ && !job_->ended()) job_->PeersChanged();
}

}  // namespace murmur::node
