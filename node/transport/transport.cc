#include "node/transport/transport.h"

#include <algorithm>
#include <string>

#include "core/log.h"
#include "core/sysinfo.h"
#include "node/transport/address.h"
#include "node/transport/session.h"

namespace murmur::node {

namespace {
// Pending handshakes at once after which the allocator returns free memory
// once they are all gone (a flood, not a fleet's restart).
constexpr std::size_t kReturnMemoryAfterPending = 64;
// Addresses whose dial backoff is remembered before the expired ones are forgotten.
constexpr std::size_t kMaxDialAddresses = 4096;
}  // namespace

int DefaultCryptoThreads(int hardware_threads) { return hardware_threads >= 4 ? 2 : 0; }

Transport::Transport(asio::io_context& io, crypto::Credentials credentials, crypto::TrustPolicy policy,
                     TransportOptions options, MessageHandler handler)
    : io_(io),
      credentials_(std::move(credentials)),
      policy_(std::move(policy)),
      options_(std::move(options)),
      handler_(std::move(handler)),
      pending_(options_.pending),
      listener_(
          io, "transport", [this](asio::ip::tcp::socket socket) { OnAccept(std::move(socket)); },
          [this] {
            if (!pending_.Shed()) return false;
            ++stats_.pending_shed;
            return true;
          }),
      report_timer_(io),
      jitter_(options_.seed, options_.self, RngPurpose::kNetwork),
      scores_(options_.scoring) {
  for (const PeerAddress& p : options_.peers) peers_[p.id].address = p;
  const int workers =
      options_.crypto_threads >= 0 ? options_.crypto_threads : DefaultCryptoThreads(HardwareThreads());
  if (workers > 0) workers_ = std::make_unique<ThreadPool>(workers + 1);  // the io thread joins in
  relay_ = std::make_unique<RelayServer>(
      io, options_.self, options_.relay,
      [this](NodeId to, crypto::Bytes r) { return SendRecord(to, std::move(r)); });
}

Transport::~Transport() { Stop(); }

Status Transport::Start() {
  MURMUR_RETURN_IF_ERROR(listener_.Listen(options_.listen_host, options_.listen_port));
  for (auto& [id, peer] : peers_) {
    if (peer.address.has_value()) WantSession(id);
  }
  ReportUnconnected();
  probe_timer_ = std::make_unique<asio::steady_timer>(io_);
  probe_timer_->expires_after(options_.probe_first);
  probe_timer_->async_wait([this](const asio::error_code& ec) {
    if (!ec) ProbeRound();
  });
  return Status::Ok();
}

void Transport::Stop() {
  if (stopped_) return;
  stopped_ = true;
  listener_.Close();
  report_timer_.cancel();
  if (probe_timer_) probe_timer_->cancel();
  relay_->Stop();
  for (auto& w : sessions_) {
    if (auto s = w.lock()) s->Detach();
  }
  sessions_.clear();
  for (auto& [id, peer] : peers_) {
    if (peer.redial) peer.redial->cancel();
    peer.session.reset();
    peer.queue.clear();
    peer.queued_bytes = 0;
  }
  stats_.peers_connected = 0;
}

void Transport::AddPeer(const PeerAddress& address) {
  Peer& peer = peers_[address.id];
  peer.address = address;
  if (listener_.open() && !stopped_) WantSession(address.id);
}

void Transport::OnAccept(asio::ip::tcp::socket socket) {
  if (stopped_) return;
  asio::error_code ignored;
  const std::string address = socket.remote_endpoint(ignored).address().to_string();
  const auto now = std::chrono::steady_clock::now();
  // Refused before the first handshake byte is read.
  if (scores_.IsGraylisted(address, now)) {
    ++stats_.connections_refused;
    socket.close(ignored);
    return;
  }
  if (!scores_.AllowHandshake(address, now)) {
    ++stats_.handshakes_rate_limited;
    MURMUR_LOG(kDebug) << "connection from " << address << " over the handshake rate limit: closed";
    socket.close(ignored);
    return;
  }
  auto s = std::make_shared<Session>(this, std::move(socket), crypto::HandshakeRole::kResponder, kNoNode);
  const PendingConnections::Ticket ticket = pending_.Admit(address, [this, w = std::weak_ptr<Session>(s)] {
    ++stats_.pending_shed;
    if (auto victim = w.lock())
      victim->Close(
          Status::ResourceExhausted("pending handshakes at their limit: the oldest of the busiest "
                                    "address is shed"));
  });
  if (ticket == 0) {
    ++stats_.pending_refused;
    MURMUR_LOG(kDebug) << "connection from " << address << ": " << options_.pending.max_per_address
                       << " handshakes from that address are pending already: closed";
    return;  // the unstarted session closes its socket
  }
  s->set_pending_ticket(ticket);
  s->set_sniff_preface();  // a relay circuit's end, when this node relays
  pending_peak_ = std::max(pending_peak_, pending_.size());
  sessions_.push_back(s);
  s->Start();
}

void Transport::Dial(NodeId id) {
  Peer& peer = peers_[id];
  if (stopped_ || !peer.address.has_value()) return;
  if (peer.session) return;  // the peer dialled this node meanwhile
  if (!Dials(id)) ++stats_.reverse_dials;
  if (peer.via_relay_next && !peer.address->relays.empty()) {
    peer.via_relay_next = false;
    return DialViaRelay(id);
  }
  auto addr = ParseAddress(peer.address->host);
  if (!addr.ok()) {
    MURMUR_LOG(kError) << "node " << id << ": " << addr.status().ToString();
    return;
  }
  const auto now = std::chrono::steady_clock::now();
  const Nanos graylisted = scores_.GraylistRemaining(id, now);
  if (graylisted > Nanos(0)) return RedialAfter(id, graylisted);  // when its term ends
  // Whatever node id claims this address: one dial at a time, and its backoff.
  const std::string key = peer.address->host + " " + std::to_string(peer.address->port);
  AddressDials& at = address_dials_[key];
  if (at.in_flight || now < at.next) {
    ++stats_.dials_deferred;
    return RedialAfter(id, at.in_flight ? options_.reconnect_initial : Nanos(at.next - now));
  }
  if (sessions_open_ >= options_.max_sessions) {
    ++stats_.sessions_over_limit;
    return RedialAfter(id, options_.reconnect_max);
  }
  at.in_flight = true;
  ++sessions_open_;  // the dial's socket; the session keeps the count
  peer.dialing = true;
  auto socket = std::make_shared<asio::ip::tcp::socket>(io_);
  auto timer = ConnectTimer(socket);
  asio::ip::tcp::endpoint ep(*addr, peer.address->port);
  socket->async_connect(ep, [this, id, key, socket, timer](const asio::error_code& ec) {
    timer->cancel();
    if (stopped_) return;
    if (ec) {
      --sessions_open_;
      DialFailed(key);
      ++stats_.connect_failures;
      MURMUR_LOG(kDebug) << "connect to node " << id << ": " << ec.message();
      Unreached(id, ConnectFailure(ec));
      peers_[id].dialing = false;
      peers_[id].via_relay_next = true;  // when it has relays
      ScheduleRedial(id);
      return;
    }
    auto s = std::make_shared<Session>(this, std::move(*socket), crypto::HandshakeRole::kInitiator, id);
    s->set_counted();
    s->set_dial_key(key);
    sessions_.push_back(s);
    s->Start();
  });
}

std::shared_ptr<asio::steady_timer> Transport::ConnectTimer(
    const std::shared_ptr<asio::ip::tcp::socket>& socket) {
  auto timer = std::make_shared<asio::steady_timer>(io_);
  timer->expires_after(options_.connect_timeout);
  timer->async_wait([socket](const asio::error_code& ec) {
    if (!ec) {
      asio::error_code ignored;
      socket->close(ignored);
    }
  });
  return timer;
}

// Exponential backoff with "equal jitter": half the step fixed, half uniform.
Nanos Transport::Backoff(int failures) {
  const int k = std::min(failures, 16);
  double step = static_cast<double>(options_.reconnect_initial.count()) * static_cast<double>(1u << k);
  step = std::min(step, static_cast<double>(options_.reconnect_max.count()));
  return Nanos(static_cast<std::int64_t>(step / 2 + jitter_.Uniform() * step / 2));
}

void Transport::ScheduleRedial(NodeId id) {
  Peer& peer = peers_[id];
  if (stopped_ || peer.dialing) return;
  const int k = std::min(peer.failures, 20);
  ++peer.failures;
  RedialAfter(id, Backoff(k));
}

void Transport::DialFailed(const std::string& key) {
  const auto now = std::chrono::steady_clock::now();
  AddressDials& at = address_dials_[key];
  at.in_flight = false;
  at.next = now + Backoff(at.failures++);
  // Bounded: addresses whose backoff is over are forgotten when there are many.
  if (address_dials_.size() > kMaxDialAddresses)
    std::erase_if(address_dials_,
                  [now](const auto& kv) { return !kv.second.in_flight && kv.second.next <= now; });
}

void Transport::RedialAfter(NodeId id, Nanos delay) {
  Peer& peer = peers_[id];
  if (!peer.redial) peer.redial = std::make_unique<asio::steady_timer>(io_);
  peer.dialing = true;
  peer.redial->expires_after(delay);
  peer.redial->async_wait([this, id](const asio::error_code& ec) {
    if (ec || stopped_) return;
    peers_[id].dialing = false;
    Dial(id);
  });
}

void Transport::ReleasePending(Session* session) {
  if (session->pending_ticket() == 0) return;
  pending_.Remove(session->pending_ticket());
  session->set_pending_ticket(0);
  // After a burst of handshakes (a flood), give what their buffers took back.
  if (pending_.size() == 0 && pending_peak_ >= kReturnMemoryAfterPending) {
    ReturnFreeMemory();
    pending_peak_ = 0;
  }
}

bool Transport::OnAuthenticated(Session* session) {
  ReleasePending(session);
  if (session->counted()) return true;
  if (sessions_open_ >= options_.max_sessions) {
    ++stats_.sessions_over_limit;
    return false;
  }
  ++sessions_open_;
  session->set_counted();
  return true;
}

void Transport::OnReady(const std::shared_ptr<Session>& session) {
  Peer& peer = peers_[session->peer()];
  // Of two sessions dialled from opposite ends, both keep the smaller id's.
  const auto smaller_dialled = [this](const Session& s) {
    return (s.role() == crypto::HandshakeRole::kInitiator) == (options_.self < s.peer());
  };
  if (peer.session && peer.session != session && smaller_dialled(*peer.session) &&
      !smaller_dialled(*session)) {
    ++stats_.sessions_duplicate;
    session->Close(Status::AlreadyExists("a session dialled by the smaller id is open"));
    return;
  }
  if (peer.session && peer.session != session) {
    auto old = peer.session;
    peer.session.reset();
    old->Close(Status::Aborted("replaced by a newer session"));
  }
  if (!peer.session) ++stats_.peers_connected;
  peer.session = session;
  peer.failures = 0;
  peer.dialing = false;
  if (peer.redial) peer.redial->cancel();
  if (peer.reported)
    MURMUR_LOG(kInfo) << "node " << options_.self << ": node " << session->peer() << " reached after "
                      << std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() -
                                                                          peer.unconnected_since)
                             .count()
                      << " s without a session";
  peer.unconnected_since = {};
  peer.why.clear();
  peer.reported = false;
  ++stats_.sessions_opened;
  if (session->relay() != kNoNode) ++stats_.relayed_sessions;
  const crypto::Cipher cipher = session->peer_info()->cipher;
  if (cipher == crypto::Cipher::kAesGcm) ++stats_.sessions_aes_gcm;
  // A message cut off by the old session cannot continue on the new one.
  if (!peer.queue.empty() && peer.queue.front().next_record > 0) {
    peer.queued_bytes -= peer.queue.front().payload->size();
    peer.queue.pop_front();
    ++stats_.send_queue_drops;
  }
  if (!session->dial_key().empty()) address_dials_.erase(session->dial_key());  // the address is good
  MURMUR_LOG(kInfo) << "node " << options_.self << ": session with node " << session->peer() << " ready ("
                    << crypto::CipherName(cipher)
                    << (session->relay() != kNoNode ? ", through relay " + std::to_string(session->relay())
                                                    : "")
                    << (smaller_dialled(*session) ? ")" : ", dialled by the larger id)");
  session->Pump();
}

void Transport::OnClosed(Session* session, NodeId peer_id, bool was_dialer, const Status& why) {
  std::erase_if(sessions_, [session](const std::weak_ptr<Session>& w) {
    auto s = w.lock();
    return !s || s.get() == session;
  });
  ReleasePending(session);
  if (session->counted()) --sessions_open_;
  // A dial that ended before its HELLO (refused, wrong node, garbage) backs its address off.
  if (!session->dial_key().empty() && !session->ready() && !stopped_) DialFailed(session->dial_key());
  if (peer_id == kNoNode || stopped_) return;
  auto it = peers_.find(peer_id);
  if (it == peers_.end()) return;
  Peer& peer = it->second;
  if (peer.session.get() == session) {
    peer.session.reset();
    --stats_.peers_connected;
    peer.unconnected_since = std::chrono::steady_clock::now();
    peer.reported = false;
    peer.why = "session lost: " + why.ToString();
    if (!peer.queue.empty() && peer.queue.front().next_record > 0) {
      peer.queued_bytes -= peer.queue.front().payload->size();
      peer.queue.pop_front();
      ++stats_.send_queue_drops;
    }
  }
  if (peer.session) return;
  if (was_dialer && !session->ready()) {
    const bool relayed = session->relay() != kNoNode;
    Unreached(peer_id, relayed ? "through relay " + std::to_string(session->relay()) + ": " + why.ToString()
                               : "handshake failed: " + why.ToString());
    peer.via_relay_next = !relayed;  // the other way next
  }
  if (was_dialer || Dials(peer_id)) {
    peer.dialing = false;
    ScheduleRedial(peer_id);
  } else if (!peer.dialing && peer.address.has_value()) {
    RedialAfter(peer_id, options_.reverse_dial_after);  // its own dial first
  }
}

void Transport::Send(NodeId to, std::uint32_t kind, std::shared_ptr<const crypto::Bytes> payload) {
  if (stopped_ || to == options_.self) return;
  Peer& peer = peers_[to];
  const std::size_t size = payload->size();
  if (size > options_.max_queue_bytes || size > options_.max_message_bytes) {
    ++stats_.send_queue_drops;
    MURMUR_LOG(kWarning) << "message of " << size << " bytes for node " << to << " over the queue bound";
    return;
  }
  // Drop-oldest, sparing a message already partly on the wire.
  while (peer.queued_bytes + size > options_.max_queue_bytes) {
    auto victim = peer.queue.begin();
    if (victim != peer.queue.end() && victim->next_record > 0) ++victim;
    if (victim == peer.queue.end()) break;
    peer.queued_bytes -= victim->payload->size();
    peer.queue.erase(victim);
    ++stats_.send_queue_drops;
  }
  if (peer.queued_bytes + size > options_.max_queue_bytes) {
    ++stats_.send_queue_drops;
    return;
  }
  peer.queued_bytes += size;
  peer.queue.push_back(Outgoing{kind, std::move(payload), 0});
  if (peer.session) peer.session->Pump();
}

Status Transport::FillBatch(NodeId peer_id, crypto::SecureChannel& channel, WriteBatch* out) {
  Peer& peer = peers_[peer_id];
  const std::size_t max_plaintext = channel.options().max_plaintext;
  // Every frame of the batch gets its place and its nonce first, in order;
  // then each is sealed straight from the payload into its place.
  struct Job {
    crypto::AeadSlot slot;
    RecordPieces record;
    std::size_t at;                                // offset of the frame's body in the batch
    std::shared_ptr<const crypto::Bytes> payload;  // keeps record.data alive
  };
  std::vector<Job> jobs;
  while (!peer.queue.empty() && out->size() < options_.write_batch_bytes) {
    Outgoing& m = peer.queue.front();
    const std::size_t count = RecordCount(m.payload->size(), max_plaintext);
    RecordPieces record = MessageRecord(m.kind, *m.payload, max_plaintext, m.next_record);
    const std::size_t body = record.size() + crypto::kTagSize;
    if (body > crypto::kConnectionFrameLimits.max_frame_size)
      return Status::InvalidArgument("frame of " + std::to_string(body) + " bytes over limit " +
                                     std::to_string(crypto::kConnectionFrameLimits.max_frame_size));
    MURMUR_ASSIGN_OR_RETURN(crypto::AeadSlot slot, channel.TakeSealSlot(record.size()));
    const std::size_t at = out->Extend(crypto::kFrameHeaderSize + body);
    for (std::size_t i = 0; i < crypto::kFrameHeaderSize; ++i)
      out->data()[at + i] = static_cast<std::uint8_t>(body >> (8 * i));
    jobs.push_back(Job{slot, record, at + crypto::kFrameHeaderSize, m.payload});
    if (++m.next_record == count) {
      peer.queued_bytes -= m.payload->size();
      peer.queue.pop_front();
      ++stats_.messages_sent;
    }
  }
  std::uint8_t* base = out->data();
  const std::function<void(std::size_t)> seal = [&](std::size_t i) {
    const Job& j = jobs[i];
    const crypto::ByteSpan parts[] = {j.record.header(), j.record.data};
    j.slot.SealGather(parts, base + j.at);
  };
  if (workers_) {
    workers_->ParallelFor(jobs.size(), 1, [&](std::size_t b, std::size_t) { seal(b); });
  } else {
    for (std::size_t i = 0; i < jobs.size(); ++i) seal(i);
  }
  return Status::Ok();
}

bool Transport::HasQueued(NodeId peer) const {
  auto it = peers_.find(peer);
  return it != peers_.end() && !it->second.queue.empty();
}

std::optional<PeerThroughput> Transport::Throughput(NodeId peer) const {
  auto it = throughput_.find(peer);
  if (it == throughput_.end()) return std::nullopt;
  return it->second;
}

void Transport::OnTransfer(NodeId from, std::uint64_t bytes, std::uint64_t after_first_read, Nanos elapsed) {
  if (bytes < kTimedMessageBytes || after_first_read < kTimedBytesAfterFirstRead || elapsed <= Nanos(0))
    return;
  const double sample =
      static_cast<double>(after_first_read) / std::chrono::duration<double>(elapsed).count();
  PeerThroughput& t = throughput_[from];
  t.bytes_per_second = t.samples == 0 ? sample : (7 * t.bytes_per_second + sample) / 8;
  ++t.samples;
}

void Transport::Deliver(NodeId from, ReceivedMessage message) {
  ++stats_.messages_received;
  if (handler_) handler_(from, std::move(message));
}

std::optional<crypto::SignPublicKey> Transport::PinnedKey(NodeId peer) const {
  auto it = peers_.find(peer);
  if (it == peers_.end() || !it->second.address.has_value()) return std::nullopt;
  return it->second.address->key;
}

bool Transport::IsConnected(NodeId peer) const {
  auto it = peers_.find(peer);
  return it != peers_.end() && it->second.session != nullptr;
}

std::optional<crypto::SignPublicKey> Transport::PeerKey(NodeId peer) const {
  auto it = peers_.find(peer);
  if (it == peers_.end() || it->second.session == nullptr || !it->second.session->peer_info())
    return std::nullopt;
  return it->second.session->peer_info()->certificate.node_key;
}

std::optional<crypto::Certificate> Transport::PeerCertificate(NodeId peer) const {
  auto it = peers_.find(peer);
  if (it == peers_.end() || it->second.session == nullptr || !it->second.session->peer_info())
    return std::nullopt;
  return it->second.session->peer_info()->certificate;
}

Status Transport::SetCredentials(crypto::Credentials credentials) {
  if (credentials.identity.public_key() != credentials_.identity.public_key() ||
      credentials.certificate.node_key != credentials_.identity.public_key())
    return Status::InvalidArgument("new credentials are for another identity key");
  credentials_ = std::move(credentials);
  if (stopped_) return Status::Ok();
  // A session that fails to send closes, which edits sessions_: walk a copy.
  std::vector<std::shared_ptr<Session>> open;
  for (const auto& w : sessions_) {
    if (auto s = w.lock()) open.push_back(std::move(s));
  }
  for (const auto& s : open) s->PresentCurrentCertificate();
  return Status::Ok();
}

std::vector<NodeId> Transport::ConnectedPeers() const {
  std::vector<NodeId> out;
  for (const auto& [id, peer] : peers_)
    if (peer.session) out.push_back(id);
  return out;
}

}  // namespace murmur::node
