#include "node/transport/listener.h"

#include <algorithm>
#include <cerrno>

#if defined(__linux__)
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#endif

#include "core/log.h"

namespace murmur::node {

namespace {
bool OutOfResources(const asio::error_code& ec) {
  if (ec.category() != asio::system_category()) return false;
  const int e = ec.value();
  return e == EMFILE || e == ENFILE || e == ENOBUFS || e == ENOMEM;
}
}  // namespace

Listener::Listener(asio::io_context& io, std::string name, OnAccept on_accept, Shed shed,
                   ListenerOptions options)
    : io_(io),
      name_(std::move(name)),
      on_accept_(std::move(on_accept)),
      shed_(std::move(shed)),
      options_(options),
      backoff_timer_(io) {}

Listener::~Listener() { Close(); }

Status Listener::Listen(const std::string& host, std::uint16_t port, int backlog) {
  asio::error_code ec;
  const asio::ip::address address = asio::ip::make_address(host, ec);
  if (ec)
    return Status::InvalidArgument(name_ + " address '" + host + "' is not a numeric IPv4 or IPv6 address");
  const asio::ip::tcp::endpoint endpoint(address, port);
  auto acceptor = std::make_unique<asio::ip::tcp::acceptor>(io_);
  acceptor->open(endpoint.protocol(), ec);
  if (!ec) acceptor->set_option(asio::ip::tcp::acceptor::reuse_address(true), ec);
  if (!ec) acceptor->bind(endpoint, ec);
  if (!ec) acceptor->listen(backlog, ec);
#if defined(__linux__) && defined(TCP_DEFER_ACCEPT)
  if (!ec && options_.defer_accept_seconds > 0) {
    // Best effort: without it the pending-connection rules still hold.
    const int seconds = options_.defer_accept_seconds;
    ::setsockopt(acceptor->native_handle(), IPPROTO_TCP, TCP_DEFER_ACCEPT, &seconds, sizeof seconds);
  }
#endif
  if (ec)
    return Status::Unavailable(name_ + ": cannot listen on " + host + ":" + std::to_string(port) + ": " +
                               ec.message());
  port_ = acceptor->local_endpoint().port();
  acceptor_ = std::move(acceptor);
  Accept();
  return Status::Ok();
}

void Listener::Close() {
  backoff_timer_.cancel();
  if (!acceptor_) return;
  asio::error_code ignored;
  acceptor_->close(ignored);
  acceptor_.reset();
}

void Listener::Accept() {
  if (!acceptor_) return;
  acceptor_->async_accept([this](const asio::error_code& ec, asio::ip::tcp::socket socket) {
    if (ec == asio::error::operation_aborted || !acceptor_) return;
    if (ec) return OnError(ec);
    backoff_ = Nanos(0);
    other_errors_ = 0;
    on_accept_(std::move(socket));
    Accept();
  });
}

void Listener::OnError(const asio::error_code& ec) {
  const bool resources = OutOfResources(ec);
  bool shed = false;
  if (resources) {
    ++resource_errors_;
    ++unlogged_;
    // A descriptor freed now lets the connection that is waiting in
    // (likely a legitimate one) be taken at once.
    shed = shed_ && shed_();
  } else if (++other_errors_ < 8) {
    return Accept();
  }
  if (!shed) backoff_ = std::clamp(backoff_ * 2, options_.backoff_initial, options_.backoff_max);
  const auto now = std::chrono::steady_clock::now();
  if (!resources) {
    MURMUR_LOG(kWarning) << name_ << ": accept on port " << port_ << ": " << ec.message();
  } else if (now - last_log_ >= options_.log_interval) {
    MURMUR_LOG(kWarning)
        << name_ << ": accept on port " << port_ << " failed " << unlogged_ << " times: " << ec.message()
        << "; "
        << (shed ? std::string("closed the oldest pending handshake to take the next")
                 : "waiting " +
                       std::to_string(
                           std::chrono::duration_cast<std::chrono::milliseconds>(backoff_).count()) +
                       " ms before the next accept")
        << " (is the descriptor limit below the configured limits?)";
    last_log_ = now;
    unlogged_ = 0;
  }
  if (shed) return Accept();
  backoff_timer_.expires_after(backoff_);
  backoff_timer_.async_wait([this](const asio::error_code& e) {
    if (!e) Accept();
  });
}

}  // namespace murmur::node
