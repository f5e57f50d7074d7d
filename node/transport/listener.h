// Listener: a TCP acceptor that keeps accepting without ever spinning.
//
// Transport, ControlServer and MetricsServer each own one. Accepted sockets
// go to `on_accept`. When accept fails for want of resources (EMFILE,
// ENFILE, ENOBUFS, ENOMEM: the process or the system is out of file
// descriptors or memory), the listener first asks `shed` to free a
// descriptor (the owner closes its least valuable unauthenticated
// connection, node/transport/pending.h) and accepts again at once if it
// did; otherwise it waits, from `backoff_initial` doubling to `backoff_max`,
// before the next accept, so that a full descriptor table costs a few
// wake-ups per second instead of a core. Such failures are counted
// (resource_errors(), exported as murmur_accept_resource_errors_total) and
// logged at most once per `log_interval` with how many there were. Any
// other accept error (a connection reset before it was taken) is retried at
// once, and backed off the same way after 8 in a row.
//
// Every protocol murmur listens for has the client speak first (Noise XX's
// message 1 on the peer and control ports, an HTTP request on the metrics
// port), so on Linux the socket asks the kernel to hand over a connection
// only once its first bytes are in (TCP_DEFER_ACCEPT, `defer_accept`): a
// connection that opens and says nothing waits in the kernel for that long
// before it takes a descriptor and a pending-handshake slot, and one that
// speaks at once is taken with its first message already readable, so it is
// never shed as silent in a flood of connections that say nothing. After
// the wait a silent connection is handed over all the same (and closed by
// the owner's handshake timeout).
//
// Thread-safety: the io_context's thread; Close() before the io_context goes.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "core/env.h"
#include "core/status.h"
#include "node/transport/asio.h"

namespace murmur::node {

struct ListenerOptions {
  Nanos backoff_initial = std::chrono::milliseconds(50);  // first wait after a resource error
  Nanos backoff_max = std::chrono::seconds(1);            // the longest wait
  Nanos log_interval = std::chrono::seconds(10);          // one warning per interval at most
  int defer_accept_seconds = 1;  // TCP_DEFER_ACCEPT (Linux; 0: off): how long a silent connection waits
};

class Listener {
 public:
  using OnAccept = std::function<void(asio::ip::tcp::socket)>;
  using Shed = std::function<bool()>;  // frees one descriptor if it can; true when it did

  // `name` says whose listener it is in log lines ("transport", "control").
  Listener(asio::io_context& io, std::string name, OnAccept on_accept, Shed shed = nullptr,
           ListenerOptions options = {});
  ~Listener();
  Listener(const Listener&) = delete;
  Listener& operator=(const Listener&) = delete;

  // Binds host:port (numeric; port 0: any free one) and starts accepting.
  // InvalidArgument (bad address) or Unavailable (bind or listen failed).
  Status Listen(const std::string& host, std::uint16_t port,
                int backlog = asio::socket_base::max_listen_connections);
  void Close();

  std::uint16_t port() const { return port_; }
  bool open() const { return acceptor_ != nullptr; }
  std::uint64_t resource_errors() const { return resource_errors_; }

 private:
  void Accept();
  void OnError(const asio::error_code& ec);

  asio::io_context& io_;
  std::string name_;
  OnAccept on_accept_;
  Shed shed_;
  ListenerOptions options_;
  std::unique_ptr<asio::ip::tcp::acceptor> acceptor_;
  asio::steady_timer backoff_timer_;
  std::uint16_t port_ = 0;
  Nanos backoff_{0};
  int other_errors_ = 0;  // consecutive errors that are not resource errors
  std::chrono::steady_clock::time_point last_log_{};
  std::uint64_t unlogged_ = 0;  // resource errors since the last log line
  std::atomic<std::uint64_t> resource_errors_{0};
};

}  // namespace murmur::node
