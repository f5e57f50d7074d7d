// MetricsServer: Prometheus text exposition (format 0.0.4) over a minimal
// HTTP/1.0 handler on loopback: `GET /metrics` answers 200 with the text that
// `render` returns; any other request 404; a request head over 8 KiB or not
// complete within 5 s closes the connection. At most `max_connections` are
// served at once (the file descriptors the daemon budgets for them, docs/daemon.md
// "Limits"); more are closed on accept. Accepting backs off when descriptors
// run out (node/transport/listener.h).
//
// Thread-safety: runs on the io_context's thread; `render` is called there.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"
#include "node/transport/asio.h"
#include "node/transport/listener.h"

namespace murmur::node {

struct MetricsServerOptions {
  std::size_t max_connections = 8;  // scrapes served at once
};

class MetricsServer {
 public:
  MetricsServer(asio::io_context& io, std::function<std::string()> render, MetricsServerOptions options = {});
  // Listens on host:port (port 0: any free port). Unavailable on failure.
  Status Start(const std::string& host, std::uint16_t port);
  void Stop();
  std::uint16_t port() const { return listener_.port(); }
  std::uint64_t accept_resource_errors() const { return listener_.resource_errors(); }

 private:
  std::function<std::string()> render_;
  MetricsServerOptions options_;
  std::shared_ptr<std::size_t> open_ = std::make_shared<std::size_t>(0);  // live connections
  Listener listener_;
};

// One metric in the text format: "# HELP", "# TYPE" and the sample line.
std::string PrometheusMetric(const std::string& name, const std::string& type, const std::string& help,
                             double value);
// One metric with a sample per label value: name{label="key"} value, in the
// order given (no lines but HELP and TYPE when `samples` is empty). Label
// values are ids and other plain text, not escaped.
std::string PrometheusLabeled(const std::string& name, const std::string& type, const std::string& help,
                              const std::string& label,
                              const std::vector<std::pair<std::string, double>>& samples);

}  // namespace murmur::node
