// A peer's transfer throughput (node/transport/transport.h, Throughput)
// against an outside truth: a relay on loopback that paces one direction of
// the connection at a known rate.
#include <doctest/doctest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "tests/node/loopback.h"

namespace murmur::node {
namespace {

using testing::Creds;
using testing::Endpoint;
using testing::Policy;
using testing::Seeded;
using testing::WaitFor;

// A TCP relay on 127.0.0.1: each connection it accepts is joined to
// `target_port`, and what the connecting side sends is forwarded at `rate`
// bytes per second (in 16 KiB pieces, with at most 64 KiB of credit after a
// pause or a late wake-up); the other direction goes at full speed. An
// outside truth for the measured throughput of a link.
class PacedRelay {
 public:
  PacedRelay(std::uint16_t target_port, double rate) : target_port_(target_port), rate_(rate) {
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    REQUIRE(listen_fd_ >= 0);
    sockaddr_in a = Loopback(0);
    REQUIRE(::bind(listen_fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    REQUIRE(::listen(listen_fd_, 4) == 0);
    socklen_t len = sizeof a;
    REQUIRE(::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&a), &len) == 0);
    port_ = ntohs(a.sin_port);
    threads_.emplace_back([this] { Accept(); });
  }
  ~PacedRelay() {
    stopping_ = true;
    ::shutdown(listen_fd_, SHUT_RDWR);
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (int fd : fds_) ::shutdown(fd, SHUT_RDWR);
    }
    // Accept() may still add forwarders; join until none is left.
    for (std::size_t i = 0;; ++i) {
      std::thread t;
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (i >= threads_.size()) break;
        t = std::move(threads_[i]);
      }
      t.join();
    }
    ::close(listen_fd_);
    for (int fd : fds_) ::close(fd);
  }
  std::uint16_t port() const { return port_; }

 private:
  static sockaddr_in Loopback(std::uint16_t port) {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    return a;
  }
  void Accept() {
    while (!stopping_) {
      const int client = ::accept(listen_fd_, nullptr, nullptr);
      if (client < 0) return;
      const int server = ::socket(AF_INET, SOCK_STREAM, 0);
      sockaddr_in a = Loopback(target_port_);
      if (server < 0 || ::connect(server, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
        ::close(client);
        if (server >= 0) ::close(server);
        continue;
      }
      std::lock_guard<std::mutex> lock(mu_);
      fds_.push_back(client);
      fds_.push_back(server);
      if (stopping_) {
        ::shutdown(client, SHUT_RDWR);
        ::shutdown(server, SHUT_RDWR);
      }
      threads_.emplace_back([this, client, server] { Forward(client, server, rate_); });
      threads_.emplace_back([this, client, server] { Forward(server, client, 0); });
    }
  }
  // Copies from `from` to `to` until either ends; paced when rate > 0.
  static void Forward(int from, int to, double rate) {
    using Clock = std::chrono::steady_clock;
    const auto credit =
        std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(65536 / rate));
    std::vector<char> piece(16384);
    Clock::time_point next = Clock::now();
    while (true) {
      const ssize_t n = ::read(from, piece.data(), piece.size());
      if (n <= 0) break;
      if (rate > 0) {
        next = std::max(next, Clock::now() - credit);
        std::this_thread::sleep_until(next);
        next += std::chrono::duration_cast<Clock::duration>(
            std::chrono::duration<double>(static_cast<double>(n) / rate));
      }
      for (ssize_t done = 0; done < n;) {
        const ssize_t w = ::write(to, piece.data() + done, static_cast<std::size_t>(n - done));
        if (w <= 0) return (void)::shutdown(from, SHUT_RDWR);
        done += w;
      }
    }
    ::shutdown(to, SHUT_RDWR);
  }

  std::uint16_t target_port_;
  double rate_;
  int listen_fd_ = -1;
  std::uint16_t port_ = 0;
  std::atomic<bool> stopping_{false};
  std::mutex mu_;
  std::vector<int> fds_;
  std::vector<std::thread> threads_;
};

TEST_CASE(
    "A peer's transfer throughput is measured from its large messages: the rate of a paced link, and "
    "far more the other way") {
  auto coordinator = Seeded(100);
  Endpoint a(1, Creds(coordinator, 1), Policy(coordinator));
  Endpoint b(2, Creds(coordinator, 2), Policy(coordinator));
  REQUIRE(a.start_status().ok());
  REQUIRE(b.start_status().ok());
  constexpr double kRate = 6.25e6;  // 50 Mbit/s from node 1 to node 2
  PacedRelay relay(b.port(), kRate);
  a.AddPeer(
      {2, "127.0.0.1", relay.port(), Seeded(2).public_key()});  // 1 < 2: node 1 dials, through the relay
  b.AddPeer({1, "127.0.0.1", a.port(), Seeded(1).public_key()});
  auto throughput = [](Endpoint& e, NodeId peer) {
    std::optional<PeerThroughput> t;
    e.Do([&] { t = e.transport().Throughput(peer); });
    return t;
  };
  // Messages under kTimedMessageBytes are not timed.
  for (std::uint64_t r = 0; r < 10; ++r) a.Send(2, testing::DenseModel(r, 20'000));  // 80 kB each
  REQUIRE(WaitFor([&] { return b.sink().Count() == 10; }));
  CHECK_FALSE(throughput(b, 1).has_value());
  // 1 MB messages, each 0.16 s on the paced link.
  for (std::uint64_t r = 10; r < 16; ++r) a.Send(2, testing::DenseModel(r, 250'000));
  for (std::uint64_t r = 0; r < 4; ++r) b.Send(1, testing::DenseModel(r, 250'000));
  REQUIRE(WaitFor([&] { return b.sink().Count() == 16 && a.sink().Count() == 4; }, std::chrono::seconds(30)));
  const std::optional<PeerThroughput> paced = throughput(b, 1), fast = throughput(a, 2);
  REQUIRE(paced.has_value());
  REQUIRE(fast.has_value());
  CHECK(paced->samples == 6);
  CHECK(fast->samples >= 1);  // a message that arrives in one read is not timed
  MESSAGE("paced link " << paced->bytes_per_second / 1e6 << " MB/s (relay " << kRate / 1e6 << "), unpaced "
                        << fast->bytes_per_second / 1e6 << " MB/s");
  CHECK(paced->bytes_per_second > 0.75 * kRate);
  CHECK(paced->bytes_per_second < 1.05 * kRate);
  CHECK(fast->bytes_per_second > 3 * kRate);
}

}  // namespace
}  // namespace murmur::node
