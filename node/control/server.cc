#include "node/control/server.h"

#include <array>
#include <deque>

#include "core/log.h"
#include "crypto/frame_codec.h"
#include "node/control/codec.h"

namespace murmur::node {

namespace {
std::int64_t UnixNow() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}
}  // namespace

class ControlServer::Connection : public std::enable_shared_from_this<Connection> {
 public:
  Connection(ControlServer* server, asio::ip::tcp::socket socket)
      : server_(server),
        open_(server->open_),
        socket_(std::move(socket)),
        timer_(socket_.get_executor()),
        decoder_(crypto::kConnectionFrameLimits),
        handshake_(crypto::HandshakeRole::kResponder, server->credentials_, server->policy_, UnixNow()) {
    ++*open_;
  }
  ~Connection() { --*open_; }

  void Start() {
    ArmTimer();
    Read();
  }
  void Close() {
    asio::error_code ignored;
    socket_.close(ignored);
    timer_.cancel();
  }

 private:
  void ArmTimer() {
    auto self = shared_from_this();
    timer_.expires_after(server_->options_.idle_timeout);
    timer_.async_wait([this, self](const asio::error_code& ec) {
      if (ec) return;
      Fail(Status::DeadlineExceeded("no complete request within the idle timeout"));
    });
  }

  void Fail(const Status& why) {
    if (!socket_.is_open()) return;
    ++server_->failures_;
    MURMUR_LOG(kWarning) << "control connection closed: " << why.ToString();
    Close();
  }

  void Read() {
    auto self = shared_from_this();
    socket_.async_read_some(asio::buffer(buf_), [this, self](const asio::error_code& ec, std::size_t n) {
      if (ec) {
        if (ec != asio::error::eof && ec != asio::error::operation_aborted)
          MURMUR_LOG(kInfo) << "control connection: " << ec.message();
        Close();
        return;
      }
      std::vector<crypto::Bytes> frames;
      const Status framing = decoder_.Feed(crypto::ByteSpan(buf_.data(), n), &frames);
      for (const crypto::Bytes& f : frames) {
        Status st = OnFrame(f);
        if (!st.ok()) return Fail(st);
      }
      if (!framing.ok()) return Fail(framing);
      Write();
      Read();
    });
  }

  Status OnFrame(const crypto::Bytes& frame) {
    if (!channel_.has_value()) {
      MURMUR_RETURN_IF_ERROR(handshake_.ReadMessage(frame));
      if (handshake_.IsMyTurn()) {
        crypto::Bytes message, framed;
        MURMUR_RETURN_IF_ERROR(handshake_.WriteMessage(&message));
        MURMUR_RETURN_IF_ERROR(crypto::AppendFrame(message, crypto::kConnectionFrameLimits, &framed));
        out_.push_back(std::move(framed));
      }
      if (handshake_.IsComplete()) {
        peer_ = handshake_.peer();
        channel_.emplace(handshake_.MakeChannel());
      }
      return Status::Ok();
    }
    crypto::Bytes plaintext;
    MURMUR_RETURN_IF_ERROR(channel_->Open(frame, &plaintext));
    MURMUR_RETURN_IF_ERROR(assembler_.Add(plaintext));
    if (!assembler_.complete()) return Status::Ok();
    const crypto::Bytes body = assembler_.Take();
    proto::ControlRequest request;
    if (!request.ParseFromArray(body.data(), static_cast<int>(body.size())))
      return Status::InvalidArgument("control request is not a valid ControlRequest");
    ++server_->requests_;
    const proto::ControlResponse response = server_->handler_(request, *peer_);
    const std::string bytes = response.SerializeAsString();
    crypto::Bytes framed;
    MURMUR_RETURN_IF_ERROR(SealControlMessage(crypto::AsBytes(bytes), *channel_, &framed));
    out_.push_back(std::move(framed));
    ArmTimer();
    return Status::Ok();
  }

  void Write() {
    if (writing_ || out_.empty() || !socket_.is_open()) return;
    writing_ = true;
    auto self = shared_from_this();
    asio::async_write(socket_, asio::buffer(out_.front()),
                      [this, self](const asio::error_code& ec, std::size_t) {
                        writing_ = false;
                        if (ec) return Close();
                        out_.pop_front();
                        Write();
                      });
  }

  ControlServer* server_;
  std::shared_ptr<int> open_;
  asio::ip::tcp::socket socket_;
  asio::steady_timer timer_;
  std::array<std::uint8_t, 16384> buf_{};
  crypto::FrameDecoder decoder_;
  crypto::SecureHandshake handshake_;
  std::optional<crypto::SecureChannel> channel_;
  std::optional<crypto::PeerInfo> peer_;
  ControlMessageAssembler assembler_;
  std::deque<crypto::Bytes> out_;
  bool writing_ = false;
};

ControlServer::ControlServer(asio::io_context& io, crypto::Credentials credentials,
                             crypto::TrustPolicy policy, Handler handler, ControlServerOptions options)
    : io_(io),
      credentials_(std::move(credentials)),
      policy_(std::move(policy)),
      handler_(std::move(handler)),
      options_(options) {}

ControlServer::~ControlServer() { Stop(); }

Status ControlServer::Start(const std::string& host, std::uint16_t port) {
  asio::error_code ec;
  const auto address = asio::ip::make_address(host, ec);
  if (ec) return Status::InvalidArgument("control address '" + host + "' is not numeric");
  acceptor_ = std::make_unique<asio::ip::tcp::acceptor>(io_);
  const asio::ip::tcp::endpoint endpoint(address, port);
  acceptor_->open(endpoint.protocol(), ec);
  if (!ec) acceptor_->set_option(asio::ip::tcp::acceptor::reuse_address(true), ec);
  if (!ec) acceptor_->bind(endpoint, ec);
  if (!ec) acceptor_->listen(asio::socket_base::max_listen_connections, ec);
  if (ec)
    return Status::Unavailable("control: cannot listen on " + host + ":" + std::to_string(port) + ": " +
                               ec.message());
  port_ = acceptor_->local_endpoint().port();
  Accept();
  return Status::Ok();
}

void ControlServer::Stop() {
  if (!acceptor_) return;
  asio::error_code ignored;
  acceptor_->close(ignored);
  acceptor_.reset();
}

void ControlServer::Accept() {
  acceptor_->async_accept([this](const asio::error_code& ec, asio::ip::tcp::socket socket) {
    if (ec) {
      if (ec == asio::error::operation_aborted || !acceptor_) return;
    } else if (*open_ >= options_.max_connections) {
      ++failures_;
      MURMUR_LOG(kWarning) << "control: refusing a connection over the limit of " << options_.max_connections;
      asio::error_code ignored;
      socket.close(ignored);
    } else {
      std::make_shared<Connection>(this, std::move(socket))->Start();
    }
    if (acceptor_) Accept();
  });
}

}  // namespace murmur::node
