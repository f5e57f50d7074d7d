// The Transport as an end of relay circuits (node/transport/relay.h,
// docs/protocol.md section 7.4): dialling a peer through one of its relays,
// answering a relay's invitation, and handing a preface connection to this
// node's own RelayServer.
#include <algorithm>
#include <string>

#include "core/log.h"
#include "crypto/key_agreement.h"
#include "node/transport/address.h"
#include "node/transport/preface.h"
#include "node/transport/session.h"
#include "node/transport/transport.h"

namespace murmur::node {

namespace {
std::string RelayList(const std::vector<NodeId>& relays) {
  std::string out;
  for (NodeId r : relays) {
    if (!out.empty()) out += ", ";
    out += std::to_string(r);
  }
  return out;
}
}  // namespace

bool Transport::SendRecord(NodeId to, crypto::Bytes record) {
  auto it = peers_.find(to);
  if (it == peers_.end() || !it->second.session) return false;
  it->second.session->SendControl(std::move(record));
  return true;
}

std::optional<NodeId> Transport::RelayOf(NodeId peer) const {
  auto it = peers_.find(peer);
  if (it == peers_.end() || !it->second.session || it->second.session->relay() == kNoNode)
    return std::nullopt;
  return it->second.session->relay();
}

void Transport::ConnectPreface(const PeerAddress& relay, const RelayToken& token,
                               std::function<void(asio::ip::tcp::socket)> done,
                               std::function<void(std::string)> failed) {
  auto addr = ParseAddress(relay.host);
  if (!addr.ok()) return failed(addr.status().message());
  auto socket = std::make_shared<asio::ip::tcp::socket>(io_);
  auto timer = ConnectTimer(socket);
  auto preface = std::make_shared<crypto::Bytes>(PrefaceBytes(token));
  socket->async_connect(
      asio::ip::tcp::endpoint(*addr, relay.port), [this, socket, timer, preface, done = std::move(done),
                                                   failed = std::move(failed)](const asio::error_code& ec) {
        if (stopped_) return;
        if (ec) {
          timer->cancel();
          return failed(ConnectFailure(ec));
        }
        asio::async_write(
            *socket, asio::buffer(*preface),
            [this, socket, timer, preface, done, failed](const asio::error_code& wec, std::size_t) {
              timer->cancel();
              if (stopped_) return;
              if (wec) return failed("preface: " + wec.message());
              done(std::move(*socket));
            });
      });
}

void Transport::DialViaRelay(NodeId id) {
  Peer& peer = peers_[id];
  const std::vector<NodeId>& relays = peer.address->relays;
  NodeId relay = kNoNode;
  for (std::size_t i = 0; i < relays.size(); ++i) {
    const NodeId r = relays[(peer.relay_turn + i) % relays.size()];
    if (r == options_.self || r == id || !IsConnected(r) || !peers_[r].address.has_value()) continue;
    relay = r;
    peer.relay_turn = (peer.relay_turn + i + 1) % relays.size();
    break;
  }
  if (relay == kNoNode) {
    Unreached(id, "no relay: this node has no session with its relays (" + RelayList(relays) + ")");
    return ScheduleRedial(id);
  }
  if (sessions_open_ >= options_.max_sessions) {
    ++stats_.sessions_over_limit;
    return RedialAfter(id, options_.reconnect_max);
  }
  // Forget the circuits whose sessions are gone.
  std::erase_if(relay_dials_,
                [](const auto& kv) { return !kv.second.connecting && kv.second.session.expired(); });
  RelayToken token;
  crypto::FillRandom(token);
  ++stats_.relay_dials;
  SendRecord(relay, RelayRecord(RecordType::kRelayConnect, id, token));
  relay_dials_[token] = RelayDial{id, relay, true, "", {}};
  ++sessions_open_;  // the dial's socket; the session keeps the count
  peer.dialing = true;
  const PeerAddress at = *peers_[relay].address;
  // `why` by value: it may be the refusal held in the entry this erases.
  const auto failed = [this, id, token](std::string why) {
    relay_dials_.erase(token);
    --sessions_open_;
    Unreached(id, why);
    peers_[id].dialing = false;
    ScheduleRedial(id);
  };
  ConnectPreface(
      at, token,
      [this, id, relay, token, failed](asio::ip::tcp::socket socket) {
        RelayDial& dial = relay_dials_[token];
        if (!dial.refused.empty()) return failed(dial.refused);  // the socket closes as it goes
        dial.connecting = false;
        auto s = std::make_shared<Session>(this, std::move(socket), crypto::HandshakeRole::kInitiator, id);
        s->set_counted();
        s->set_relay(relay);
        dial.session = s;
        sessions_.push_back(s);
        s->Start();
      },
      [this, relay, failed](const std::string& why) {
        ++stats_.connect_failures;
        failed("relay " + std::to_string(relay) + ": " + why);
      });
}

void Transport::OnRelayConnect(NodeId from, NodeId target, const RelayToken& token) {
  relay_->OnConnect(from, target, token, IsConnected(target));
}

void Transport::OnRelayInvite(NodeId from, NodeId initiator, const RelayToken& token) {
  const bool mine = std::find(options_.relays.begin(), options_.relays.end(), from) != options_.relays.end();
  const bool operator_circuit = initiator == kNoNode;  // to this node's control server
  std::string why;
  if (!mine) {
    why = "node " + std::to_string(from) + " is not one of this node's relays";
  } else if (operator_circuit && !control_circuit_) {
    why = "no control server takes relayed operator connections";
  } else if (initiator == options_.self || (!operator_circuit && IsGraylisted(initiator))) {
    why = "initiator " + std::to_string(initiator) + " refused";
  } else if (invites_in_flight_ >= options_.max_relay_invites_in_flight) {
    why = std::to_string(invites_in_flight_) + " invitations are being answered already";
  } else if (!operator_circuit && sessions_open_ >= options_.max_sessions) {
    why = "sessions at their limit";
  } else if (!peers_[from].address.has_value()) {
    why = "no address for the relay";
  }
  const std::string who = operator_circuit ? "the operator" : "node " + std::to_string(initiator);
  if (!why.empty()) {
    ++stats_.relay_invites_refused;
    MURMUR_LOG(kInfo) << "node " << options_.self << ": relay invitation from node " << from << " for " << who
                      << " not answered: " << why;
    return;
  }
  ++stats_.relay_invites;
  ++invites_in_flight_;
  if (!operator_circuit) ++sessions_open_;
  ConnectPreface(
      *peers_[from].address, token,
      [this, from, initiator, operator_circuit](asio::ip::tcp::socket socket) {
        --invites_in_flight_;
        if (operator_circuit) return control_circuit_(std::move(socket), from);
        auto s =
            std::make_shared<Session>(this, std::move(socket), crypto::HandshakeRole::kResponder, initiator);
        s->set_counted();
        s->set_relay(from);
        sessions_.push_back(s);
        s->Start();
      },
      [this, from, who, operator_circuit](const std::string& failure) {
        --invites_in_flight_;
        if (!operator_circuit) --sessions_open_;
        MURMUR_LOG(kInfo) << "node " << options_.self << ": relay " << from << " for " << who << ": "
                          << failure;
      });
}

void Transport::OnRelayRefused(NodeId from, const RelayToken& token, const std::string& reason) {
  auto it = relay_dials_.find(token);
  if (it == relay_dials_.end() || it->second.relay != from) return;  // stale, or not ours
  ++stats_.relay_refusals;
  const std::string why = "relay " + std::to_string(from) + " refused: " + reason;
  if (it->second.connecting) {
    it->second.refused = why;  // the dial ends when its connection is up
    return;
  }
  const RelayDial dial = it->second;
  relay_dials_.erase(it);
  if (auto s = dial.session.lock()) {
    if (!s->ready()) s->Close(Status::Unavailable(why));
  }
  Unreached(dial.peer, why);
}

void Transport::OnPreface(Session* session, asio::ip::tcp::socket socket, const RelayToken& token,
                          crypto::Bytes rest) {
  std::erase_if(sessions_, [session](const std::weak_ptr<Session>& w) {
    auto s = w.lock();
    return !s || s.get() == session;
  });
  ReleasePending(session);
  if (OnDialBack(token)) return;  // a reachability probe's dial-back: the socket closes as it goes
  relay_->OnPreface(std::move(socket), token, std::move(rest));
}

}  // namespace murmur::node
