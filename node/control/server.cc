#include "node/control/server.h"

#include <deque>
#include <vector>

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
        state_(server->state_),
        socket_(std::move(socket)),
        timer_(socket_.get_executor()),
        decoder_(crypto::kHandshakeFrameLimits),
        handshake_(std::in_place, crypto::HandshakeRole::kResponder, server->credentials_, server->policy_,
                   UnixNow()) {}
  ~Connection() {
    state_->pending.Remove(ticket_);
    if (authenticated_) --state_->sessions;
  }

  void set_ticket(PendingConnections::Ticket ticket) { ticket_ = ticket; }
  void Start() {
    ArmTimer(server_->options_.handshake_timeout, "no completed handshake within the handshake timeout");
    Read();
  }
  void Close() {
    asio::error_code ignored;
    socket_.close(ignored);
    timer_.cancel();
  }
  // Closed to make room for a newer pending connection.
  void Shed() {
    if (!socket_.is_open()) return;
    ++state_->shed;
    Close();
  }

 private:
  void ArmTimer(Nanos limit, const char* why) {
    auto self = shared_from_this();
    timer_.expires_after(limit);
    timer_.async_wait([this, self, why](const asio::error_code& ec) {
      if (ec) return;
      Fail(Status::DeadlineExceeded(why));
    });
  }

  void Fail(const Status& why) {
    if (!socket_.is_open()) return;
    ++state_->failures;
    if (authenticated_) {
      MURMUR_LOG(kWarning) << "control session closed: " << why.ToString();
    } else {
      MURMUR_LOG(kInfo) << "control connection closed before authenticating: " << why.ToString();
    }
    Close();
  }

  void Read() {
    // Reads of a whole frame at once once authenticated (a chunk of an
    // artifact is eight of them); during the handshake a connection holds
    // 4 kB. Grown here, between reads: the read's callback walks the buffer.
    if (authenticated_ && buf_.size() < kSessionReadBytes) buf_.resize(kSessionReadBytes);
    auto self = shared_from_this();
    socket_.async_read_some(asio::buffer(buf_.data(), buf_.size()),
                            [this, self](const asio::error_code& ec, std::size_t n) {
                              if (ec) {
                                if (ec != asio::error::eof && ec != asio::error::operation_aborted)
                                  MURMUR_LOG(kInfo) << "control connection: " << ec.message();
                                Close();
                                return;
                              }
                              // One frame at a time: the frame that completes the handshake changes
                              // the limits for the frames behind it in the same read.
                              crypto::ByteSpan bytes(buf_.data(), n);
                              while (!bytes.empty()) {
                                std::vector<crypto::Bytes> frames;
                                std::size_t used = 0;
                                const Status framing = decoder_.Feed(bytes, &frames, &used);
                                bytes = bytes.subspan(used);
                                for (const crypto::Bytes& f : frames) {
                                  Status st = OnFrame(f);
                                  if (!st.ok()) return Fail(st);
                                  if (!socket_.is_open()) return;
                                }
                                if (!framing.ok()) return Fail(framing);
                              }
                              Write();
                              Read();
                            });
  }

  Status OnHandshakeFrame(const crypto::Bytes& frame) {
    MURMUR_RETURN_IF_ERROR(handshake_->ReadMessage(frame));
    if (handshake_->IsMyTurn()) {
      crypto::Bytes message, framed;
      MURMUR_RETURN_IF_ERROR(handshake_->WriteMessage(&message));
      MURMUR_RETURN_IF_ERROR(crypto::AppendFrame(message, crypto::kConnectionFrameLimits, &framed));
      out_.push_back(std::move(framed));
    }
    if (!handshake_->IsComplete()) return Status::Ok();
    state_->pending.Remove(ticket_);
    ticket_ = 0;
    if (state_->sessions >= server_->options_.max_sessions)
      return Status::ResourceExhausted("operator sessions at their limit of " +
                                       std::to_string(server_->options_.max_sessions));
    ++state_->sessions;
    authenticated_ = true;
    peer_ = handshake_->peer();
    channel_.emplace(handshake_->MakeChannel());
    handshake_.reset();
    decoder_.SetLimits(crypto::kConnectionFrameLimits);
    ArmTimer(server_->options_.idle_timeout, "no complete request within the idle timeout");
    return Status::Ok();
  }

  Status OnFrame(const crypto::Bytes& frame) {
    if (!channel_.has_value()) return OnHandshakeFrame(frame);
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
    ArmTimer(server_->options_.idle_timeout, "no complete request within the idle timeout");
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
  std::shared_ptr<State> state_;
  asio::ip::tcp::socket socket_;
  asio::steady_timer timer_;
  static constexpr std::size_t kSessionReadBytes = 64 * 1024;
  std::vector<std::uint8_t> buf_ = std::vector<std::uint8_t>(4096);
  crypto::FrameDecoder decoder_;
  std::optional<crypto::SecureHandshake> handshake_;
  std::optional<crypto::SecureChannel> channel_;
  std::optional<crypto::PeerInfo> peer_;
  ControlMessageAssembler assembler_;
  std::deque<crypto::Bytes> out_;
  PendingConnections::Ticket ticket_ = 0;
  bool authenticated_ = false;
  bool writing_ = false;
};

ControlServer::ControlServer(asio::io_context& io, crypto::Credentials credentials,
                             crypto::TrustPolicy policy, Handler handler, ControlServerOptions options)
    : io_(io),
      credentials_(std::move(credentials)),
      policy_(std::move(policy)),
      handler_(std::move(handler)),
      options_(options),
      state_(std::make_shared<State>(options.pending)),
      listener_(
          io, "control", [this](asio::ip::tcp::socket socket) { OnAccept(std::move(socket)); },
          [state = state_] { return state->pending.Shed(); }) {}

ControlServer::~ControlServer() { Stop(); }

Status ControlServer::Start(const std::string& host, std::uint16_t port) {
  return listener_.Listen(host, port);
}

void ControlServer::Stop() { listener_.Close(); }

void ControlServer::OnAccept(asio::ip::tcp::socket socket) {
  asio::error_code ignored;
  const std::string address = socket.remote_endpoint(ignored).address().to_string();
  auto c = std::make_shared<Connection>(this, std::move(socket));
  const PendingConnections::Ticket ticket =
      state_->pending.Admit(address, [w = std::weak_ptr<Connection>(c)] {
        if (auto victim = w.lock()) victim->Shed();
      });
  if (ticket == 0) {
    ++state_->failures;
    MURMUR_LOG(kDebug) << "control: " << options_.pending.max_per_address << " handshakes from " << address
                       << " are pending already: connection closed";
    return;  // the connection closes its socket as it goes
  }
  c->set_ticket(ticket);
  c->Start();
}

}  // namespace murmur::node
