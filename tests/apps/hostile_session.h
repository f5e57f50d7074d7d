// hostile_peer's session (tests/apps/hostile_peer.cc): one session to a
// daemon's peer port over a blocking socket with deadlines, spoken with the
// library's own handshake, frame and record encoders.
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "crypto/certificate.h"
#include "crypto/frame_codec.h"
#include "crypto/handshake.h"
#include "node/transport/asio.h"
#include "node/transport/envelope.h"

namespace murmur::hostile {

// One session to a daemon's peer port, blocking with deadlines: connect,
// handshake as initiator, then sealed records.
class Session {
 public:
  explicit Session(crypto::Credentials credentials, crypto::TrustPolicy policy)
      : credentials_(std::move(credentials)), policy_(std::move(policy)), socket_(io_) {}

  Status Connect(const asio::ip::tcp::endpoint& target, const std::optional<asio::ip::address>& from) {
    asio::error_code ec;
    socket_.open(target.protocol(), ec);
    if (!ec && from) socket_.bind(asio::ip::tcp::endpoint(*from, 0), ec);
    if (!ec) socket_.connect(target, ec);
    if (ec) return Status::Unavailable("connect: " + ec.message());
    return Status::Ok();
  }

  Status Handshake() {
    crypto::SecureHandshake hs(crypto::HandshakeRole::kInitiator, credentials_, policy_, UnixNow());
    crypto::Bytes m;
    MURMUR_RETURN_IF_ERROR(hs.WriteMessage(&m));
    MURMUR_RETURN_IF_ERROR(WriteFrame(m));
    MURMUR_ASSIGN_OR_RETURN(crypto::Bytes reply, ReadFrame(std::chrono::seconds(5)));
    MURMUR_RETURN_IF_ERROR(hs.ReadMessage(reply));
    MURMUR_RETURN_IF_ERROR(hs.WriteMessage(&m));
    MURMUR_RETURN_IF_ERROR(WriteFrame(m));
    channel_.emplace(hs.MakeChannel());
    return Status::Ok();
  }

  Status SendRecord(const crypto::Bytes& record) {
    crypto::Bytes sealed;
    MURMUR_RETURN_IF_ERROR(channel_->Seal(record, &sealed));
    return WriteFrame(sealed);
  }
  Status SendMessage(std::uint32_t kind, const crypto::Bytes& payload) {
    const std::size_t max = channel_->options().max_plaintext;
    for (std::size_t i = 0; i < node::RecordCount(payload.size(), max); ++i) {
      crypto::Bytes record;
      node::AppendRecord(kind, payload, max, i, &record);
      MURMUR_RETURN_IF_ERROR(SendRecord(record));
    }
    return Status::Ok();
  }
  // The next record the daemon sends, within `limit`.
  Result<crypto::Bytes> ReadRecord(std::chrono::milliseconds limit) {
    MURMUR_ASSIGN_OR_RETURN(crypto::Bytes frame, ReadFrame(limit));
    crypto::Bytes plain;
    MURMUR_RETURN_IF_ERROR(channel_->Open(frame, &plain));
    return plain;
  }
  // Reads records until the daemon's HELLO; its node id.
  Result<NodeId> AwaitHello(std::chrono::milliseconds limit) {
    const auto end = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < end) {
      MURMUR_ASSIGN_OR_RETURN(crypto::Bytes r,
                              ReadRecord(std::chrono::duration_cast<std::chrono::milliseconds>(
                                  end - std::chrono::steady_clock::now())));
      if (r.size() == 5 && r[0] == static_cast<std::uint8_t>(node::RecordType::kHello))
        return static_cast<NodeId>(crypto::LoadU32(r.data() + 1));
    }
    return Status::DeadlineExceeded("no HELLO");
  }
  // True when the daemon closes the session within `limit` (records in between are read and dropped).
  bool ClosedWithin(std::chrono::milliseconds limit) {
    const auto end = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < end) {
      auto r = ReadFrame(
          std::chrono::duration_cast<std::chrono::milliseconds>(end - std::chrono::steady_clock::now()));
      if (!r.ok()) return r.status().code() != StatusCode::kDeadlineExceeded;
    }
    return false;
  }

 private:
  static std::int64_t UnixNow() {
    return std::chrono::duration_cast<std::chrono::seconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
  }
  Status WriteFrame(const crypto::Bytes& body) {
    crypto::Bytes framed;
    MURMUR_RETURN_IF_ERROR(crypto::AppendFrame(body, crypto::kConnectionFrameLimits, &framed));
    asio::error_code ec;
    asio::write(socket_, asio::buffer(framed), ec);
    if (ec) return Status::Unavailable("write: " + ec.message());
    return Status::Ok();
  }
  // Reads exactly `n` bytes into `out` before `end`.
  Status ReadExact(std::uint8_t* out, std::size_t n, std::chrono::steady_clock::time_point end) {
    bool done = false;
    asio::error_code result;
    asio::async_read(socket_, asio::buffer(out, n), [&](const asio::error_code& e, std::size_t) {
      done = true;
      result = e;
    });
    io_.restart();
    io_.run_until(end);
    if (!done) {
      socket_.cancel();
      io_.restart();
      io_.run();
      return Status::DeadlineExceeded("read timed out");
    }
    if (result) return Status::Unavailable("read: " + result.message());
    return Status::Ok();
  }
  Result<crypto::Bytes> ReadFrame(std::chrono::milliseconds limit) {
    const auto end = std::chrono::steady_clock::now() + limit;
    std::uint8_t len[4];
    MURMUR_RETURN_IF_ERROR(ReadExact(len, 4, end));
    const std::uint32_t n = crypto::LoadU32(len);
    if (n > crypto::kConnectionFrameLimits.max_frame_size) return Status::DataLoss("frame too long");
    crypto::Bytes body(n);
    MURMUR_RETURN_IF_ERROR(ReadExact(body.data(), n, end));
    return body;
  }

  crypto::Credentials credentials_;
  crypto::TrustPolicy policy_;
  asio::io_context io_;
  asio::ip::tcp::socket socket_;
  std::optional<crypto::SecureChannel> channel_;
};

}  // namespace murmur::hostile
