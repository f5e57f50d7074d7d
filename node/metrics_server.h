// MetricsServer: Prometheus text exposition (format 0.0.4) over a minimal
// HTTP/1.0 handler on loopback: `GET /metrics` answers 200 with the text that
// `render` returns; any other request 404; a request head over 8 KiB or not
// complete within 5 s closes the connection.
//
// Thread-safety: runs on the io_context's thread; `render` is called there.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "core/status.h"
#include "node/transport/asio.h"

namespace murmur::node {

class MetricsServer {
 public:
  MetricsServer(asio::io_context& io, std::function<std::string()> render);
  // Listens on host:port (port 0: any free port). Unavailable on failure.
  Status Start(const std::string& host, std::uint16_t port);
  void Stop();
  std::uint16_t port() const { return port_; }

 private:
  void Accept();

  asio::io_context& io_;
  std::function<std::string()> render_;
  std::unique_ptr<asio::ip::tcp::acceptor> acceptor_;
  std::uint16_t port_ = 0;
};

// One metric in the text format: "# HELP", "# TYPE" and the sample line.
std::string PrometheusMetric(const std::string& name, const std::string& type, const std::string& help,
                             double value);

}  // namespace murmur::node
