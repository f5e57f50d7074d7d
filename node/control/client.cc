#include "node/control/client.h"

#include <algorithm>
#include <optional>
#include <vector>

#include "crypto/frame_codec.h"
#include "node/control/codec.h"
#include "node/transport/address.h"
#include "node/transport/asio.h"
#include "node/transport/preface.h"

namespace murmur::node {

namespace {

std::int64_t UnixNow() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// One blocking exchange over an io_context driven with a deadline.
class Exchange {
 public:
  explicit Exchange(std::chrono::steady_clock::time_point deadline) : socket_(io_), deadline_(deadline) {}
  void set_deadline(std::chrono::steady_clock::time_point deadline) { deadline_ = deadline; }

  Status Connect(const HostPort& hp) {
    asio::error_code ec;
    const auto address = asio::ip::make_address(hp.host, ec);
    if (ec) return Status::InvalidArgument("address '" + hp.host + "' is not numeric");
    asio::error_code result = asio::error::would_block;
    socket_.async_connect(asio::ip::tcp::endpoint(address, hp.port),
                          [&](const asio::error_code& e) { result = e; });
    MURMUR_RETURN_IF_ERROR(RunUntilDone([&] { return result != asio::error::would_block; }));
    if (result) return Status::Unavailable("connect: " + result.message());
    socket_.set_option(asio::ip::tcp::no_delay(true), ec);
    return Status::Ok();
  }

  Status Write(const crypto::Bytes& bytes) {
    bool done = false;
    asio::error_code result;
    asio::async_write(socket_, asio::buffer(bytes), [&](const asio::error_code& e, std::size_t) {
      result = e;
      done = true;
    });
    MURMUR_RETURN_IF_ERROR(RunUntilDone([&] { return done; }));
    if (result) return Status::Unavailable("write: " + result.message());
    return Status::Ok();
  }

  // Reads until at least one whole frame is in; returns it.
  Result<crypto::Bytes> ReadFrame() {
    while (frames_.empty()) {
      bool done = false;
      asio::error_code result;
      std::size_t n = 0;
      socket_.async_read_some(asio::buffer(buf_.data(), buf_.size()),
                              [&](const asio::error_code& e, std::size_t got) {
                                result = e;
                                n = got;
                                done = true;
                              });
      MURMUR_RETURN_IF_ERROR(RunUntilDone([&] { return done; }));
      if (result == asio::error::eof) return Status::Unavailable("the daemon closed the connection");
      if (result) return Status::Unavailable("read: " + result.message());
      std::vector<crypto::Bytes> got;
      MURMUR_RETURN_IF_ERROR(decoder_.Feed(crypto::ByteSpan(buf_.data(), n), &got));
      for (auto& f : got) frames_.push_back(std::move(f));
    }
    crypto::Bytes f = std::move(frames_.front());
    frames_.erase(frames_.begin());
    return f;
  }

 private:
  template <typename Pred>
  Status RunUntilDone(Pred done) {
    while (!done()) {
      io_.restart();
      if (io_.run_one_until(deadline_) == 0 && !done()) {
        asio::error_code ignored;
        socket_.close(ignored);
        io_.restart();
        io_.poll();  // let the cancelled operation finish
        return Status::DeadlineExceeded("no answer within the timeout");
      }
    }
    return Status::Ok();
  }

  asio::io_context io_;
  asio::ip::tcp::socket socket_;
  std::chrono::steady_clock::time_point deadline_;
  std::vector<std::uint8_t> buf_ = std::vector<std::uint8_t>(64 * 1024);
  crypto::FrameDecoder decoder_{crypto::kConnectionFrameLimits};
  std::vector<crypto::Bytes> frames_;
};

}  // namespace

struct ControlSession::Impl {
  explicit Impl(std::chrono::steady_clock::time_point deadline) : x(deadline) {}
  Exchange x;
  std::optional<crypto::SecureChannel> channel;
  bool broken = false;
};

ControlSession::ControlSession(std::string address, std::unique_ptr<Impl> impl)
    : address_(std::move(address)), impl_(std::move(impl)) {}
ControlSession::~ControlSession() = default;

namespace {

// "NODE@HOST:PORT": node NODE's control server, through the daemon whose
// control port is HOST:PORT (a relay of NODE's). nullopt for a plain address.
Result<std::optional<NodeId>> RelayedNode(const std::string& address, std::string* relay) {
  const auto at = address.find('@');
  if (at == std::string::npos) {
    *relay = address;
    return std::optional<NodeId>();
  }
  const std::string id = address.substr(0, at);
  if (id.empty() || id.size() > 10 || id.find_first_not_of("0123456789") != std::string::npos ||
      std::stoull(id) >= kNoNode)
    return Status::InvalidArgument("address '" + address + "': '" + id + "' before '@' is not a node id");
  *relay = address.substr(at + 1);
  return std::optional<NodeId>(static_cast<NodeId>(std::stoull(id)));
}

}  // namespace

Result<std::unique_ptr<ControlSession>> ControlSession::Open(const std::string& address,
                                                             const crypto::Credentials& credentials,
                                                             const crypto::TrustPolicy& policy,
                                                             std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  auto opened = [&]() -> Result<std::unique_ptr<Impl>> {
    std::string direct;
    MURMUR_ASSIGN_OR_RETURN(std::optional<NodeId> node, RelayedNode(address, &direct));
    MURMUR_ASSIGN_OR_RETURN(HostPort hp, ParseHostPort(direct));
    std::optional<RelayToken> token;
    if (node.has_value()) {
      // The relay opens a circuit to the node's control server; this end
      // connects to the relay's peer port with the token's preface.
      proto::ControlRequest ask;
      ask.mutable_control_relay()->set_node(*node);
      MURMUR_ASSIGN_OR_RETURN(proto::ControlResponse grant,
                              CallDaemon(direct, credentials, policy, ask, timeout));
      if (!grant.ok()) return Status::FailedPrecondition(grant.error());
      if (grant.relay().token().size() != kRelayTokenSize)
        return Status::DataLoss("the relay's grant carries no token");
      token.emplace();
      std::copy(grant.relay().token().begin(), grant.relay().token().end(), token->begin());
      MURMUR_ASSIGN_OR_RETURN(hp, ParseHostPort(grant.relay().address()));
    }
    auto impl = std::make_unique<Impl>(deadline);
    Exchange& x = impl->x;
    MURMUR_RETURN_IF_ERROR(x.Connect(hp));
    if (token.has_value()) MURMUR_RETURN_IF_ERROR(x.Write(PrefaceBytes(*token)));
    crypto::SecureHandshake hs(crypto::HandshakeRole::kInitiator, credentials, policy, UnixNow());
    while (!hs.IsComplete()) {
      if (hs.IsMyTurn()) {
        crypto::Bytes message, framed;
        MURMUR_RETURN_IF_ERROR(hs.WriteMessage(&message));
        MURMUR_RETURN_IF_ERROR(crypto::AppendFrame(message, crypto::kConnectionFrameLimits, &framed));
        MURMUR_RETURN_IF_ERROR(x.Write(framed));
      } else {
        MURMUR_ASSIGN_OR_RETURN(crypto::Bytes frame, x.ReadFrame());
        MURMUR_RETURN_IF_ERROR(hs.ReadMessage(frame));
      }
    }
    // Through a relay, the daemon that answers must be the node asked for.
    if (node.has_value() && hs.peer().certificate.node_id != *node)
      return Status::PermissionDenied("node " + std::to_string(hs.peer().certificate.node_id) +
                                      " answered, not node " + std::to_string(*node));
    impl->channel.emplace(hs.MakeChannel());
    return impl;
  }();
  if (!opened.ok()) return opened.status().WithContext("daemon " + address);
  return std::unique_ptr<ControlSession>(new ControlSession(address, std::move(opened).value()));
}

Result<proto::ControlResponse> ControlSession::Call(const proto::ControlRequest& request,
                                                    std::chrono::milliseconds timeout) {
  MURMUR_RETURN_IF_ERROR(Send(request, timeout));
  return Receive(timeout);
}

Status ControlSession::Send(const proto::ControlRequest& request, std::chrono::milliseconds timeout) {
  auto sent = [&]() -> Status {
    if (impl_->broken) return Status::Unavailable("the session broke on an earlier request");
    impl_->broken = true;  // until this write completes
    impl_->x.set_deadline(std::chrono::steady_clock::now() + timeout);
    crypto::Bytes framed;
    const std::string body = request.SerializeAsString();
    MURMUR_RETURN_IF_ERROR(SealControlMessage(crypto::AsBytes(body), *impl_->channel, &framed));
    MURMUR_RETURN_IF_ERROR(impl_->x.Write(framed));
    impl_->broken = false;
    return Status::Ok();
  }();
  if (!sent.ok()) return sent.WithContext("daemon " + address_);
  return sent;
}

Result<proto::ControlResponse> ControlSession::Receive(std::chrono::milliseconds timeout) {
  auto answered = [&]() -> Result<proto::ControlResponse> {
    if (impl_->broken) return Status::Unavailable("the session broke on an earlier request");
    impl_->broken = true;  // until this answer is in
    impl_->x.set_deadline(std::chrono::steady_clock::now() + timeout);
    crypto::SecureChannel& channel = *impl_->channel;
    ControlMessageAssembler assembler;
    while (!assembler.complete()) {
      MURMUR_ASSIGN_OR_RETURN(crypto::Bytes frame, impl_->x.ReadFrame());
      crypto::Bytes plaintext;
      MURMUR_RETURN_IF_ERROR(channel.Open(frame, &plaintext));
      MURMUR_RETURN_IF_ERROR(assembler.Add(plaintext));
    }
    const crypto::Bytes reply = assembler.Take();
    proto::ControlResponse response;
    if (!response.ParseFromArray(reply.data(), static_cast<int>(reply.size())))
      return Status::DataLoss("the daemon's answer is not a valid ControlResponse");
    impl_->broken = false;
    return response;
  }();
  if (!answered.ok()) return answered.status().WithContext("daemon " + address_);
  return answered;
}

Result<proto::ControlResponse> CallDaemon(const std::string& address, const crypto::Credentials& credentials,
                                          const crypto::TrustPolicy& policy,
                                          const proto::ControlRequest& request,
                                          std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  MURMUR_ASSIGN_OR_RETURN(std::unique_ptr<ControlSession> session,
                          ControlSession::Open(address, credentials, policy, timeout));
  const auto left =
      std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
  return session->Call(request, std::max(left, std::chrono::milliseconds(1)));
}

}  // namespace murmur::node
