#include "node/transport/relay.h"

#include <algorithm>
#include <array>
#include <optional>
#include <string>

#include "core/log.h"
#include "crypto/key_agreement.h"

namespace murmur::node {

namespace {
std::string EndName(NodeId n) { return n == kNoNode ? "the operator" : "node " + std::to_string(n); }
}  // namespace

struct RelayServer::Circuit {
  explicit Circuit(asio::io_context& io) : timer(io), waits{asio::steady_timer(io), asio::steady_timer(io)} {}
  std::array<NodeId, 2> nodes{kNoNode, kNoNode};  // [0] the initiator, [1] the target
  std::array<RelayToken, 2> tokens{};
  std::array<std::optional<asio::ip::tcp::socket>, 2> sockets;
  std::array<crypto::Bytes, 2> rest;
  std::array<crypto::Bytes, 2> buffers;
  asio::steady_timer timer;                 // the pair timeout, then the idle check
  std::array<asio::steady_timer, 2> waits;  // a direction held back for its nodes' byte rate
  std::chrono::steady_clock::time_point last_activity{};
  bool spliced = false;
  bool closed = false;
};

RelayServer::RelayServer(asio::io_context& io, NodeId self, RelayOptions options, SendRecord send)
    : io_(io), self_(self), options_(options), send_(std::move(send)) {}

RelayServer::~RelayServer() { Stop(); }

void RelayServer::Stop() {
  if (stopped_) return;
  stopped_ = true;
  std::vector<std::shared_ptr<Circuit>> all;
  for (const auto& [token, c] : by_token_) all.push_back(c);
  for (const auto& c : all) Close(c, "relay stopping");
  for (Orphan& o : orphans_) {
    asio::error_code ignored;
    o.socket->close(ignored);
    o.timer->cancel();
  }
  orphans_.clear();
}

std::size_t RelayServer::CircuitsOf(NodeId node) const {
  auto it = nodes_.find(node);
  return it == nodes_.end() ? 0 : it->second.circuits;
}

RelayServer::Bucket& RelayServer::BucketOf(NodeId node) {
  auto [it, fresh] = nodes_.try_emplace(node);
  if (fresh) {
    it->second.tokens = options_.burst_bytes_per_node;
    it->second.last = std::chrono::steady_clock::now();
  }
  return it->second;
}

void RelayServer::Refuse(NodeId from, const RelayToken& token, const std::string& why) {
  ++stats_.circuits_refused;
  MURMUR_LOG(kInfo) << "node " << self_ << ": relay circuit for node " << from << " refused: " << why;
  send_(from, RelayRefusedRecord(token, why));
}

std::string RelayServer::Refusal(NodeId from, NodeId target, bool connected) const {
  if (target == from || target == self_ || target == kNoNode)
    return "no circuit to node " + std::to_string(target) + " through this relay";
  if (!connected) return "the relay has no session with node " + std::to_string(target);
  if (by_token_.size() / 2 >= options_.max_circuits)
    return "the relay carries its limit of " + std::to_string(options_.max_circuits) + " circuits";
  for (NodeId n : {from, target}) {
    if (n != kNoNode && CircuitsOf(n) >= options_.max_circuits_per_node)
      return "node " + std::to_string(n) + " holds its limit of " +
             std::to_string(options_.max_circuits_per_node) + " circuits through this relay";
  }
  return "";
}

bool RelayServer::Open(NodeId from, NodeId target, const RelayToken& token) {
  auto c = std::make_shared<Circuit>(io_);
  c->nodes = {from, target};
  c->tokens[0] = token;
  crypto::FillRandom(c->tokens[1]);
  if (!send_(target, RelayRecord(RecordType::kRelayInvite, from, c->tokens[1]))) return false;
  by_token_[c->tokens[0]] = c;
  by_token_[c->tokens[1]] = c;
  ++BucketOf(from).circuits;
  ++BucketOf(target).circuits;
  ++stats_.circuits_open;
  c->timer.expires_after(options_.pair_timeout);
  c->timer.async_wait([this, c](const asio::error_code& ec) {
    if (ec || c->spliced) return;
    ++stats_.circuits_unpaired;
    Close(c, "an end did not come within the pair timeout");
  });
  // The initiator's connection may have come before its request.
  auto orphan =
      std::find_if(orphans_.begin(), orphans_.end(), [&](const Orphan& o) { return o.token == token; });
  if (orphan != orphans_.end()) {
    Orphan o = std::move(*orphan);
    orphans_.erase(orphan);
    o.timer->cancel();
    Attach(c, 0, std::move(*o.socket), std::move(o.rest));
  }
  return true;
}

void RelayServer::OnConnect(NodeId from, NodeId target, const RelayToken& token, bool connected) {
  if (stopped_) return;
  if (!options_.serve) return Refuse(from, token, "node " + std::to_string(self_) + " does not relay");
  if (by_token_.count(token) != 0) return Refuse(from, token, "token already in use");
  if (std::string why = Refusal(from, target, connected); !why.empty()) return Refuse(from, token, why);
  if (!Open(from, target, token))
    Refuse(from, token, "the relay has no session with node " + std::to_string(target));
}

Result<RelayToken> RelayServer::OpenControl(NodeId target, bool connected) {
  if (stopped_) return Status::Unavailable("the relay is stopping");
  if (std::string why = Refusal(kNoNode, target, connected); !why.empty()) {
    ++stats_.circuits_refused;
    return Status::FailedPrecondition(why);
  }
  RelayToken token;
  crypto::FillRandom(token);
  if (!Open(kNoNode, target, token))
    return Status::FailedPrecondition("no session with node " + std::to_string(target));
  return token;
}

void RelayServer::OnPreface(asio::ip::tcp::socket socket, const RelayToken& token, crypto::Bytes rest) {
  asio::error_code ignored;
  if (stopped_ || !options_.serve) {
    ++stats_.prefaces_unknown;
    socket.close(ignored);
    return;
  }
  auto it = by_token_.find(token);
  if (it != by_token_.end()) {
    const auto c = it->second;
    return Attach(c, c->tokens[0] == token ? 0 : 1, std::move(socket), std::move(rest));
  }
  if (orphans_.size() >= kMaxOrphans) {
    ++stats_.prefaces_unknown;
    socket.close(ignored);
    return;
  }
  Orphan o{token, std::make_shared<asio::ip::tcp::socket>(std::move(socket)), std::move(rest),
           std::make_shared<asio::steady_timer>(io_)};
  o.timer->expires_after(kOrphanWait);
  o.timer->async_wait([this, token](const asio::error_code& ec) {
    if (ec) return;
    auto at =
        std::find_if(orphans_.begin(), orphans_.end(), [&](const Orphan& x) { return x.token == token; });
    if (at == orphans_.end()) return;
    ++stats_.prefaces_unknown;
    asio::error_code e;
    at->socket->close(e);
    orphans_.erase(at);
  });
  orphans_.push_back(std::move(o));
}

void RelayServer::Attach(const std::shared_ptr<Circuit>& c, int end, asio::ip::tcp::socket socket,
                         crypto::Bytes rest) {
  if (c->closed || c->sockets[end].has_value()) {
    asio::error_code ignored;
    socket.close(ignored);
    return;
  }
  asio::error_code ignored;
  socket.set_option(asio::ip::tcp::no_delay(true), ignored);
  c->sockets[end].emplace(std::move(socket));
  c->rest[end] = std::move(rest);
  if (c->sockets[0].has_value() && c->sockets[1].has_value()) Splice(c);
}

void RelayServer::Splice(const std::shared_ptr<Circuit>& c) {
  c->spliced = true;
  ++stats_.circuits_spliced;
  c->last_activity = std::chrono::steady_clock::now();
  MURMUR_LOG(kInfo) << "node " << self_ << ": relaying between " << EndName(c->nodes[0]) << " and "
                    << EndName(c->nodes[1]);
  c->timer.cancel();
  ArmIdle(c);
  for (int end = 0; end < 2; ++end) {
    c->buffers[end].resize(kRelayBufferBytes);
    if (c->rest[end].empty()) {
      Forward(c, end);
      continue;
    }
    // What came after an end's preface goes first.
    if (tap_) tap_(c->rest[end]);
    stats_.bytes_forwarded += c->rest[end].size();
    asio::async_write(*c->sockets[1 - end], asio::buffer(c->rest[end]),
                      [this, c, end](const asio::error_code& ec, std::size_t) {
                        if (c->closed) return;
                        if (ec) return Close(c, "write: " + ec.message());
                        c->rest[end].clear();
                        Forward(c, end);
                      });
  }
}

void RelayServer::ArmIdle(const std::shared_ptr<Circuit>& c) {
  c->timer.expires_at(c->last_activity + options_.idle_timeout);
  c->timer.async_wait([this, c](const asio::error_code& ec) {
    if (ec || c->closed) return;
    if (std::chrono::steady_clock::now() - c->last_activity >= options_.idle_timeout)
      return Close(c, "circuit idle past the relay's idle timeout");
    ArmIdle(c);
  });
}

void RelayServer::Forward(const std::shared_ptr<Circuit>& c, int from_end) {
  if (c->closed) return;
  c->sockets[from_end]->async_read_some(
      asio::buffer(c->buffers[from_end]), [this, c, from_end](const asio::error_code& ec, std::size_t n) {
        if (c->closed) return;
        if (ec) return Close(c, ec == asio::error::eof ? "an end closed" : "read: " + ec.message());
        c->last_activity = std::chrono::steady_clock::now();
        const crypto::ByteSpan bytes(c->buffers[from_end].data(), n);
        if (tap_) tap_(bytes);
        stats_.bytes_forwarded += n;
        const Nanos wait = Charge(*c, n);
        asio::async_write(*c->sockets[1 - from_end], asio::buffer(c->buffers[from_end].data(), n),
                          [this, c, from_end, wait](const asio::error_code& wec, std::size_t) {
                            if (c->closed) return;
                            if (wec) return Close(c, "write: " + wec.message());
                            if (wait <= Nanos(0)) return Forward(c, from_end);
                            ++stats_.rate_limited_waits;
                            c->waits[from_end].expires_after(wait);
                            c->waits[from_end].async_wait([this, c, from_end](const asio::error_code& tec) {
                              if (!tec) Forward(c, from_end);
                            });
                          });
      });
}

Nanos RelayServer::Charge(const Circuit& c, std::size_t n) {
  const auto now = std::chrono::steady_clock::now();
  const double rate = options_.bytes_per_second_per_node;
  double wait_seconds = 0;
  for (NodeId node : c.nodes) {
    Bucket& b = BucketOf(node);
    const double dt = std::chrono::duration<double>(now - b.last).count();
    b.last = now;
    b.tokens = std::min(options_.burst_bytes_per_node, b.tokens + dt * rate) - static_cast<double>(n);
    if (b.tokens < 0) wait_seconds = std::max(wait_seconds, -b.tokens / rate);
  }
  return std::chrono::duration_cast<Nanos>(std::chrono::duration<double>(wait_seconds));
}

void RelayServer::Close(const std::shared_ptr<Circuit>& c, const std::string& why) {
  if (c->closed) return;
  c->closed = true;
  asio::error_code ignored;
  for (auto& s : c->sockets)
    if (s.has_value()) s->close(ignored);
  c->timer.cancel();
  for (auto& w : c->waits) w.cancel();
  by_token_.erase(c->tokens[0]);
  by_token_.erase(c->tokens[1]);
  for (NodeId n : c->nodes) {
    auto it = nodes_.find(n);
    if (it != nodes_.end() && it->second.circuits > 0) --it->second.circuits;
  }
  --stats_.circuits_open;
  MURMUR_LOG(kInfo) << "node " << self_ << ": relay circuit between " << EndName(c->nodes[0]) << " and "
                    << EndName(c->nodes[1]) << " closed: " << why;
}

}  // namespace murmur::node
