#include "node/metrics_server.h"

#include <array>
#include <sstream>

namespace murmur::node {

namespace {
constexpr std::size_t kMaxRequestHead = 8192;

class HttpConnection : public std::enable_shared_from_this<HttpConnection> {
 public:
  HttpConnection(asio::ip::tcp::socket socket, const std::function<std::string()>& render)
      : socket_(std::move(socket)), timer_(socket_.get_executor()), render_(render) {}

  void Start() {
    auto self = shared_from_this();
    timer_.expires_after(std::chrono::seconds(5));
    timer_.async_wait([self](const asio::error_code& ec) {
      if (!ec) {
        asio::error_code ignored;
        self->socket_.close(ignored);
      }
    });
    Read();
  }

 private:
  void Read() {
    auto self = shared_from_this();
    socket_.async_read_some(asio::buffer(buf_), [self](const asio::error_code& ec, std::size_t n) {
      if (ec) return;
      self->head_.append(self->buf_.data(), n);
      if (self->head_.find("\r\n\r\n") != std::string::npos) return self->Respond();
      if (self->head_.size() > kMaxRequestHead) {
        asio::error_code ignored;
        self->socket_.close(ignored);
        return;
      }
      self->Read();
    });
  }

  void Respond() {
    const bool metrics = head_.rfind("GET /metrics ", 0) == 0 || head_.rfind("GET /metrics?", 0) == 0;
    const std::string body = metrics ? render_() : "not found\n";
    std::ostringstream out;
    out << (metrics ? "HTTP/1.0 200 OK\r\n" : "HTTP/1.0 404 Not Found\r\n")
        << "Content-Type: " << (metrics ? "text/plain; version=0.0.4" : "text/plain") << "\r\n"
        << "Content-Length: " << body.size() << "\r\nConnection: close\r\n\r\n"
        << body;
    response_ = out.str();
    auto self = shared_from_this();
    asio::async_write(socket_, asio::buffer(response_), [self](const asio::error_code&, std::size_t) {
      asio::error_code ignored;
      self->socket_.shutdown(asio::ip::tcp::socket::shutdown_both, ignored);
      self->socket_.close(ignored);
      self->timer_.cancel();
    });
  }

  asio::ip::tcp::socket socket_;
  asio::steady_timer timer_;
  std::function<std::string()> render_;
  std::array<char, 1024> buf_{};
  std::string head_;
  std::string response_;
};
}  // namespace

MetricsServer::MetricsServer(asio::io_context& io, std::function<std::string()> render)
    : io_(io), render_(std::move(render)) {}

Status MetricsServer::Start(const std::string& host, std::uint16_t port) {
  asio::error_code ec;
  auto addr = asio::ip::make_address(host, ec);
  if (ec) return Status::InvalidArgument("metrics address '" + host + "' is not numeric");
  auto acceptor = std::make_unique<asio::ip::tcp::acceptor>(io_);
  asio::ip::tcp::endpoint ep(addr, port);
  acceptor->open(ep.protocol(), ec);
  if (!ec) acceptor->set_option(asio::ip::tcp::acceptor::reuse_address(true), ec);
  if (!ec) acceptor->bind(ep, ec);
  if (!ec) acceptor->listen(16, ec);
  if (ec)
    return Status::Unavailable("metrics listen on " + host + ":" + std::to_string(port) + ": " +
                               ec.message());
  port_ = acceptor->local_endpoint().port();
  acceptor_ = std::move(acceptor);
  Accept();
  return Status::Ok();
}

void MetricsServer::Stop() {
  if (!acceptor_) return;
  asio::error_code ec;
  acceptor_->close(ec);
}

void MetricsServer::Accept() {
  acceptor_->async_accept([this](const asio::error_code& ec, asio::ip::tcp::socket socket) {
    if (ec == asio::error::operation_aborted || !acceptor_->is_open()) return;
    if (!ec) std::make_shared<HttpConnection>(std::move(socket), render_)->Start();
    Accept();
  });
}

std::string PrometheusMetric(const std::string& name, const std::string& type, const std::string& help,
                             double value) {
  std::ostringstream out;
  out.precision(17);
  out << "# HELP " << name << ' ' << help << "\n# TYPE " << name << ' ' << type << '\n'
      << name << ' ' << value << '\n';
  return out.str();
}

}  // namespace murmur::node
