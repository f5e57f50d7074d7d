#include "node/transport/session.h"

#include <chrono>
#include <string>

#include "core/log.h"
#include "node/transport/frame_records.h"
#include "node/transport/preface.h"
#include "node/transport/transport.h"

namespace murmur::node {

namespace {
// Receive buffer per authenticated session: several largest frames per
// read, so that most frames are parsed and decrypted where the read put
// them. A session in its handshake reads into a buffer of one largest
// handshake frame (about 360 bytes): unauthenticated peers cost little.
constexpr std::size_t kReadBufferBytes = 256 * 1024;
constexpr std::size_t kHandshakeReadBufferBytes =
    crypto::kFrameHeaderSize + crypto::kHandshakeFrameLimits.max_frame_size;

std::int64_t UnixNow() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}
}  // namespace

Session::Session(Transport* transport, asio::ip::tcp::socket socket, crypto::HandshakeRole role,
                 NodeId expected_peer)
    : transport_(transport),
      socket_(std::move(socket)),
      tick_(socket_.get_executor()),
      role_(role),
      expected_peer_(expected_peer),
      frames_(crypto::kHandshakeFrameLimits, kHandshakeReadBufferBytes),
      reader_(transport->options_.max_message_bytes) {}

void Session::Start() {
  started_ = last_receive_ = last_send_ = std::chrono::steady_clock::now();
  asio::error_code ec;
  socket_.set_option(asio::ip::tcp::no_delay(true), ec);
  address_ = relay_ != kNoNode ? "relay " + std::to_string(relay_)
                               : socket_.remote_endpoint(ec).address().to_string();
  handshake_.emplace(role_, transport_->credentials_, transport_->policy_, UnixNow());
  presented_ = transport_->credentials_.certificate;
  if (role_ == crypto::HandshakeRole::kInitiator) {
    Status st = QueueHandshakeMessage();
    if (!st.ok()) return Close(st);
  }
  ArmTick();
  Read();
  Pump();
}

void Session::Detach() {
  transport_ = nullptr;
  closed_ = true;
  asio::error_code ec;
  socket_.close(ec);
  tick_.cancel();
}

void Session::Close(const Status& why) {
  if (closed_) return;
  closed_ = true;
  asio::error_code ec;
  socket_.close(ec);
  tick_.cancel();
  const NodeId who = Accountable();
  MURMUR_LOG(kInfo) << "session with "
                    << (who == kNoNode ? "unidentified peer " + address_
                        : who == peer_
                            ? "node " + std::to_string(who)
                            : "node " + std::to_string(who) + " (by its certificate, before HELLO)")
                    << " closed: " << why.ToString();
  if (transport_ != nullptr) {
    const bool dialer = role_ == crypto::HandshakeRole::kInitiator;
    transport_->OnClosed(this, dialer ? expected_peer_ : peer_, dialer, why);
  }
}

NodeId Session::Accountable() const {
  if (peer_ != kNoNode) return peer_;
  if (peer_info_.has_value() && peer_info_->certificate.BindsNodeId()) return peer_info_->certificate.node_id;
  return kNoNode;
}

Status Session::QueueHandshakeMessage() {
  crypto::Bytes message;
  MURMUR_RETURN_IF_ERROR(handshake_->WriteMessage(&message));
  crypto::Bytes framed;
  MURMUR_RETURN_IF_ERROR(crypto::AppendFrame(message, crypto::kConnectionFrameLimits, &framed));
  raw_.push_back(std::move(framed));
  return Status::Ok();
}

void Session::Read() {
  auto self = shared_from_this();
  const std::span<std::uint8_t> space = frames_.Space();
  socket_.async_read_some(
      asio::buffer(space.data(), space.size()), [this, self](const asio::error_code& ec, std::size_t n) {
        if (closed_) return;
        if (ec) {
          return Close(ec == asio::error::eof ? Status::Unavailable("peer closed the connection")
                                              : Status::Unavailable("read: " + ec.message()));
        }
        last_receive_ = std::chrono::steady_clock::now();
        ++reads_;
        if (transport_ != nullptr) transport_->stats_.bytes_received += n;
        if (transport_ != nullptr && relay_ != kNoNode) transport_->stats_.relayed_bytes_received += n;
        frames_.Commit(n);
        if (sniff_preface_ && transport_ != nullptr) {
          const Sniff sniff = SniffPreface();
          if (sniff == Sniff::kMore) return Read();
          if (sniff != Sniff::kHandshake) return;
        }
        // Frames completed before a bad length are processed, in order, before it closes the session.
        std::optional<Status> bad_length;
        std::vector<std::span<std::uint8_t>> sealed;  // to open on the crypto workers
        while (true) {
          if (closed_ || transport_ == nullptr) return;
          std::span<std::uint8_t> frame;
          Result<bool> next = frames_.Next(&frame);
          if (!next.ok()) {
            bad_length = next.status();
            break;
          }
          if (!*next) break;
          if (channel_.has_value() && transport_->workers_ != nullptr) {
            sealed.push_back(frame);
            continue;
          }
          const bool in_handshake = !channel_.has_value();
          Status st = OnFrame(frame);
          if (!st.ok()) {
            ++(in_handshake ? transport_->stats_.handshake_failures : transport_->stats_.frames_rejected);
            transport_->OnSessionFailure(Accountable(), address_, in_handshake, st);
            return Close(st);
          }
        }
        if (!sealed.empty()) {
          Status st = OnSealedFrames(sealed);
          if (closed_ || transport_ == nullptr) return;
          if (!st.ok()) {
            ++transport_->stats_.frames_rejected;
            transport_->OnSessionFailure(Accountable(), address_, false, st);
            return Close(st);
          }
        }
        if (bad_length.has_value()) {
          // A bad length before the channel is open is also a failed handshake.
          const bool in_handshake = !channel_.has_value();
          ++transport_->stats_.frames_rejected;
          if (in_handshake) ++transport_->stats_.handshake_failures;
          transport_->OnSessionFailure(Accountable(), address_, in_handshake, *bad_length);
          return Close(*bad_length);
        }
        Pump();
        Read();
      });
}

Session::Sniff Session::SniffPreface() {
  RelayToken token;
  const crypto::ByteSpan first = frames_.buffered();
  Result<PrefaceScan> scan = ScanPreface(first, &token);
  if (!scan.ok()) {
    ++transport_->stats_.handshake_failures;
    transport_->OnSessionFailure(kNoNode, address_, true, scan.status());
    Close(scan.status());
    return Sniff::kFailed;
  }
  if (*scan == PrefaceScan::kIncomplete) return Sniff::kMore;
  sniff_preface_ = false;
  if (*scan == PrefaceScan::kNotPreface) return Sniff::kHandshake;
  // The socket leaves this session, which ends without a word: it was never one.
  crypto::Bytes rest(first.begin() + static_cast<std::ptrdiff_t>(kPrefaceBytes), first.end());
  closed_ = true;
  tick_.cancel();
  Transport* transport = transport_;
  transport_ = nullptr;
  transport->OnPreface(this, std::move(socket_), token, std::move(rest));
  return Sniff::kHandedOff;
}

void Session::SendControl(crypto::Bytes record) {
  if (closed_ || transport_ == nullptr || !ready_) return;
  control_.push_back(std::move(record));
  Pump();
}

Status Session::OnFrame(std::span<std::uint8_t> frame) {
  if (!channel_.has_value()) return OnHandshakeFrame(frame);
  if (channel_->cipher() != crypto::Cipher::kChaChaPoly) {
    // Decrypted as it is read, straight to where the bytes go; authenticated
    // before anything is acted on (GcmFrameRecord, OnRecord).
    MURMUR_ASSIGN_OR_RETURN(crypto::AeadSlot slot, channel_->TakeOpenSlot(frame.size()));
    GcmFrameRecord record(slot, frame);
    return OnRecord(record);
  }
  // Verified where the read put it; decrypted only where the bytes go.
  MURMUR_ASSIGN_OR_RETURN(crypto::AeadSlot slot, channel_->VerifyNext(frame));
  FrameRecord record(slot, crypto::ByteSpan(frame).first(frame.size() - crypto::kTagSize));
  return OnRecord(record);
}

Status Session::OnSealedFrames(std::span<const std::span<std::uint8_t>> frames) {
  // Slots in nonce order first; a frame the channel refuses (over the size
  // limit) ends the list, and its error comes after the frames before it.
  std::vector<crypto::AeadSlot> slots;
  slots.reserve(frames.size());
  Status refused = Status::Ok();
  for (std::span<std::uint8_t> frame : frames) {
    Result<crypto::AeadSlot> slot = channel_->TakeOpenSlot(frame.size());
    if (!slot.ok()) {
      refused = slot.status();
      break;
    }
    slots.push_back(*slot);
  }
  std::vector<std::uint8_t> authentic(slots.size(), 0);
  transport_->workers_->ParallelFor(slots.size(), 1, [&](std::size_t i, std::size_t) {
    if (slots[i].Open(frames[i])) authentic[i] = 1;
  });
  for (std::size_t i = 0; i < slots.size(); ++i) {
    if (closed_ || transport_ == nullptr) return Status::Ok();
    if (!authentic[i]) {
      channel_->FailOpen();
      return Status::Unauthenticated("authentication failed at nonce " + std::to_string(slots[i].nonce) +
                                     " (tampered, replayed, reordered or wrong key)");
    }
    SpanRecord record(crypto::ByteSpan(frames[i]).first(frames[i].size() - crypto::kTagSize));
    MURMUR_RETURN_IF_ERROR(OnRecord(record));
  }
  return refused;
}

Status Session::OnHandshakeFrame(crypto::ByteSpan frame) {
  MURMUR_RETURN_IF_ERROR(handshake_->ReadMessage(frame));
  transport_->pending_.Spoke(pending_ticket_);  // a handshake under way outlives silent connections
  if (handshake_->IsMyTurn()) MURMUR_RETURN_IF_ERROR(QueueHandshakeMessage());
  if (!handshake_->IsComplete()) return Status::Ok();
  if (!transport_->OnAuthenticated(this)) {
    Close(Status::ResourceExhausted("authenticated sessions at their limit of " +
                                    std::to_string(transport_->options_.max_sessions)));
    return Status::Ok();
  }
  peer_info_ = handshake_->peer();
  channel_.emplace(handshake_->MakeChannel(transport_->options_.channel));
  frames_.Grow(crypto::kConnectionFrameLimits, kReadBufferBytes);
  handshake_.reset();  // its keys live on in the channel
  control_.push_back(HelloRecord(transport_->options_.self));
  PresentCurrentCertificate();  // reloaded during the handshake
  return Status::Ok();
}

void Session::PresentCurrentCertificate() {
  if (closed_ || transport_ == nullptr || !channel_.has_value()) return;
  const crypto::Credentials& now = transport_->credentials_;
  if (presented_ == now.certificate) return;
  control_.push_back(CertificateRecord({now.certificate, now.static_key_signature}));
  presented_ = now.certificate;
  ++transport_->stats_.certificates_presented;
  Pump();
}

Status Session::OnPeerCertificate(crypto::ByteSpan bytes) {
  auto payload = crypto::DecodeHandshakePayload(bytes);
  if (!payload.ok()) return Status::DataLoss("CERTIFICATE record: " + payload.status().ToString());
  const crypto::Certificate& cert = payload->certificate;
  const crypto::TrustPolicy& policy = transport_->policy_;
  Status st = crypto::VerifyCertificate(cert, policy.coordinator_key, policy.network_id, UnixNow());
  if (st.ok() && !cert.HasRoles(policy.required_roles))
    st = Status::PermissionDenied("certificate has roles " + crypto::RolesToString(cert.roles) + ", needs " +
                                  crypto::RolesToString(policy.required_roles));
  if (st.ok() && cert.node_key != peer_info_->certificate.node_key)
    st = Status::PermissionDenied("certificate is for another node key than the session's");
  if (st.ok()) st = crypto::VerifyNodeBinding(cert, peer_, transport_->PinnedKey(peer_));
  if (st.ok() && !crypto::VerifySignature(
                     cert.node_key, crypto::StaticKeyBindingBytes(policy.network_id, peer_info_->static_key),
                     payload->static_key_signature))
    st =
        Status::Unauthenticated("the session's Noise static key is not signed by the certificate's node key");
  if (!st.ok()) {
    ++transport_->stats_.certificate_updates_refused;
    MURMUR_LOG(kWarning) << "node " << transport_->options_.self << ": renewed certificate of node " << peer_
                         << " refused, the session keeps the old one: " << st.ToString();
    return Status::Ok();
  }
  ++transport_->stats_.certificate_updates;
  MURMUR_LOG(kInfo) << "node " << transport_->options_.self << ": node " << peer_
                    << " renewed its certificate: serial " << cert.serial << ", not_after " << cert.not_after;
  peer_info_->certificate = cert;
  return Status::Ok();
}

Status Session::OnRecord(RecordSource& record) {
  RecordEvent event;
  // A message from a graylisted node or over the address's rate is skipped
  // unread (decided on its BEGIN record, before any payload byte is kept).
  // With AES-GCM that one byte is not yet authenticated: a forged frame can
  // at most spend one of the address's message tokens before the session
  // closes on its tag.
  std::uint8_t type = 0;
  if (record.size() > 0) record.Read(0, 1, &type);
  const bool begin = type == static_cast<std::uint8_t>(RecordType::kBegin);
  const bool keep = !(begin && ready_ && !transport_->AdmitMessage(peer_, address_));
  const Status fed = reader_.Feed(record, &event, keep);
  // A record that fails authentication is reported as such, whatever the
  // reader made of its bytes; its event is never acted on.
  if (Status authentic = record.Authenticate(); !authentic.ok()) {
    channel_->FailOpen();
    return authentic;
  }
  MURMUR_RETURN_IF_ERROR(fed);
  switch (event.type) {
    case RecordType::kHello: {
      if (peer_ != kNoNode) return Status::DataLoss("second HELLO on a session");
      const NodeId id = event.hello_node;
      if (id == kNoNode || id == transport_->options_.self)
        return Status::PermissionDenied("peer claims node id " + std::to_string(id));
      if (expected_peer_ != kNoNode && id != expected_peer_) {
        // A stale address, not an offence of whoever answers there now.
        Close(Status::PermissionDenied("dialled node " + std::to_string(expected_peer_) + " but node " +
                                       std::to_string(id) + " answered"));
        return Status::Ok();
      }
      // The certificate binds the node id (docs/protocol.md section 2); a
      // legacy one without it only where the configuration pins the key.
      bool legacy = false;
      MURMUR_RETURN_IF_ERROR(
          crypto::VerifyNodeBinding(peer_info_->certificate, id, transport_->PinnedKey(id), &legacy));
      if (legacy) {
        ++transport_->stats_.legacy_certificates;
        MURMUR_LOG(kWarning) << "node " << transport_->options_.self << ": node " << id
                             << " presents a version 1 certificate without a node id (serial "
                             << peer_info_->certificate.serial
                             << "), accepted because its key is pinned in the config; reissue it with "
                                "`murmur cert issue --node-id "
                             << id << "`";
      }
      if (transport_->IsGraylisted(id)) {
        ++transport_->stats_.sessions_refused;
        Close(Status::PermissionDenied("node " + std::to_string(id) + " is graylisted"));
        return Status::Ok();
      }
      peer_ = id;
      ready_ = true;
      transport_->OnReady(shared_from_this());
      return Status::Ok();
    }
    case RecordType::kPing:
      if (!ready_) return Status::DataLoss("PING before HELLO");
      control_.push_back(PingRecord(RecordType::kPong, event.token));
      return Status::Ok();
    case RecordType::kPong:
      if (!ready_) return Status::DataLoss("PONG before HELLO");
      return Status::Ok();
    case RecordType::kCertificate:
      if (!ready_) return Status::DataLoss("CERTIFICATE record before HELLO");
      return OnPeerCertificate(event.certificate);
    case RecordType::kRelayConnect:
      if (!ready_) return Status::DataLoss("RELAY_CONNECT before HELLO");
      transport_->OnRelayConnect(peer_, event.relay_node, event.relay_token);
      return Status::Ok();
    case RecordType::kRelayInvite:
      if (!ready_) return Status::DataLoss("RELAY_INVITE before HELLO");
      transport_->OnRelayInvite(peer_, event.relay_node, event.relay_token);
      return Status::Ok();
    case RecordType::kRelayRefused:
      if (!ready_) return Status::DataLoss("RELAY_REFUSED before HELLO");
      transport_->OnRelayRefused(peer_, event.relay_token, event.relay_reason);
      return Status::Ok();
    case RecordType::kProbeRequest:
      if (!ready_) return Status::DataLoss("PROBE_REQUEST before HELLO");
      transport_->OnProbeRequest(peer_, address_, event.relay_token);
      return Status::Ok();
    case RecordType::kProbeResult:
      if (!ready_) return Status::DataLoss("PROBE_RESULT before HELLO");
      transport_->OnProbeResult(peer_, event.relay_token, event.probe_verdict, event.relay_reason);
      return Status::Ok();
    case RecordType::kBegin:
    case RecordType::kContinue:
      if (!ready_) return Status::DataLoss("message before HELLO");
      TimeTransfer(event.type == RecordType::kBegin, record.size(), event.message.has_value());
      if (event.message.has_value()) transport_->Deliver(peer_, std::move(*event.message));
      return Status::Ok();
  }
  return Status::Ok();
}

void Session::TimeTransfer(bool begin, std::size_t record_bytes, bool complete) {
  if (begin) inbound_ = Inbound{last_receive_, reads_, 0, 0, true};
  if (!inbound_.active) return;  // a message skipped unread never completes
  inbound_.bytes += record_bytes;
  if (reads_ != inbound_.first_read_number) inbound_.after_first_read += record_bytes;
  if (!complete) return;
  inbound_.active = false;
  transport_->OnTransfer(peer_, inbound_.bytes, inbound_.after_first_read,
                         last_receive_ - inbound_.first_read);
}

void Session::Pump() {
  if (writing_ || closed_ || transport_ == nullptr) return;
  write_buffer_.Clear();
  for (const crypto::Bytes& m : raw_) write_buffer_.Append(m);
  raw_.clear();
  if (channel_.has_value()) {
    crypto::Bytes sealed, framed;
    std::vector<crypto::Bytes> records;
    records.swap(control_);
    for (const crypto::Bytes& record : records) {
      sealed.clear();
      Status st = channel_->Seal(record, &sealed);
      framed.clear();
      if (st.ok()) st = crypto::AppendFrame(sealed, crypto::kConnectionFrameLimits, &framed);
      if (!st.ok()) return Close(st);
      write_buffer_.Append(framed);
    }
    if (ready_) {
      Status st = transport_->FillBatch(peer_, *channel_, &write_buffer_);
      if (!st.ok()) return Close(st);
    }
  }
  if (write_buffer_.empty()) return;
  writing_ = true;
  last_send_ = std::chrono::steady_clock::now();
  auto self = shared_from_this();
  asio::async_write(socket_, asio::buffer(write_buffer_.data(), write_buffer_.size()),
                    [this, self](const asio::error_code& ec, std::size_t n) {
                      writing_ = false;
                      if (closed_) return;
                      if (ec) return Close(Status::Unavailable("write: " + ec.message()));
                      if (transport_ != nullptr) transport_->stats_.bytes_sent += n;
                      if (transport_ != nullptr && relay_ != kNoNode)
                        transport_->stats_.relayed_bytes_sent += n;
                      Pump();
                    });
}

void Session::ArmTick() {
  if (closed_ || transport_ == nullptr) return;
  auto interval = std::min(transport_->options_.keepalive_interval, transport_->options_.handshake_timeout);
  tick_.expires_after(std::min<Nanos>(interval, std::chrono::milliseconds(500)));
  auto self = shared_from_this();
  tick_.async_wait([this, self](const asio::error_code& ec) {
    if (ec || closed_ || transport_ == nullptr) return;
    OnTick();
    ArmTick();
  });
}

void Session::OnTick() {
  const auto now = std::chrono::steady_clock::now();
  const TransportOptions& o = transport_->options_;
  if (!ready_ && now - started_ > o.handshake_timeout) {
    if (!channel_.has_value()) ++transport_->stats_.handshake_failures;
    return Close(Status::DeadlineExceeded("no authenticated HELLO within the handshake timeout"));
  }
  if (now - last_receive_ > o.idle_timeout)
    return Close(Status::DeadlineExceeded("peer silent past the idle timeout"));
  // A certificate is valid up to not_after (exclusive): a session does not
  // outlive the peer's or our own (the last one sent on it: a renewed
  // certificate extends the session). The redial that follows handshakes
  // afresh, and the handshake refuses an expired certificate.
  if (peer_info_.has_value()) {
    const std::int64_t unix_now = UnixNow();
    const char* whose = unix_now >= peer_info_->certificate.not_after ? "the peer's"
                        : unix_now >= presented_.not_after            ? "this node's"
                                                                      : nullptr;
    if (whose != nullptr) {
      ++transport_->stats_.sessions_expired;
      return Close(Status::Unauthenticated(std::string(whose) + " certificate expired during the session"));
    }
  }
  if (ready_ && now - last_send_ >= o.keepalive_interval) {
    control_.push_back(
        PingRecord(RecordType::kPing, static_cast<std::uint64_t>(now.time_since_epoch().count())));
    Pump();
  }
}

}  // namespace murmur::node
