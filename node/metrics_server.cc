#include "node/metrics_server.h"

#include <array>
#include <cmath>
#include <sstream>

namespace murmur::node {

namespace {
constexpr std::size_t kMaxRequestHead = 8192;

class HttpConnection : public std::enable_shared_from_this<HttpConnection> {
 public:
  HttpConnection(asio::ip::tcp::socket socket, const std::function<std::string()>& render,
                 std::shared_ptr<std::size_t> open)
      : socket_(std::move(socket)), timer_(socket_.get_executor()), render_(render), open_(std::move(open)) {
    ++*open_;
  }
  ~HttpConnection() { --*open_; }

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
  std::shared_ptr<std::size_t> open_;
  std::array<char, 1024> buf_{};
  std::string head_;
  std::string response_;
};
}  // namespace

MetricsServer::MetricsServer(asio::io_context& io, std::function<std::string()> render,
                             MetricsServerOptions options)
    : render_(std::move(render)),
      options_(options),
      listener_(io, "metrics", [this](asio::ip::tcp::socket socket) {
        if (*open_ >= options_.max_connections) {
          asio::error_code ignored;
          socket.close(ignored);
          return;
        }
        std::make_shared<HttpConnection>(std::move(socket), render_, open_)->Start();
      }) {}

Status MetricsServer::Start(const std::string& host, std::uint16_t port) {
  return listener_.Listen(host, port, 16);
}

void MetricsServer::Stop() { listener_.Close(); }

namespace {

// A sample value as the exposition format spells it: NaN, +Inf and -Inf,
// other values with 17 significant digits.
std::string PrometheusValue(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  std::ostringstream out;
  out.precision(17);
  out << value;
  return out.str();
}

}  // namespace

std::string PrometheusMetric(const std::string& name, const std::string& type, const std::string& help,
                             double value) {
  std::ostringstream out;
  out.precision(17);
  out << "# HELP " << name << ' ' << help << "\n# TYPE " << name << ' ' << type << '\n'
      << name << ' ' << PrometheusValue(value) << '\n';
  return out.str();
}

std::string PrometheusLabeled(const std::string& name, const std::string& type, const std::string& help,
                              const std::string& label,
                              const std::vector<std::pair<std::string, double>>& samples) {
  std::ostringstream out;
  out.precision(17);
  out << "# HELP " << name << ' ' << help << "\n# TYPE " << name << ' ' << type << '\n';
  for (const auto& [key, value] : samples)
    out << name << '{' << label << "=\"" << key << "\"} " << PrometheusValue(value) << '\n';
  return out.str();
}

}  // namespace murmur::node
