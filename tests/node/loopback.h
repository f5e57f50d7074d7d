// Test harness for node/: credentials signed by a test coordinator, an
// Endpoint (io_context + Transport + AsioEnv on its own thread) that records
// the messages it receives, and a RawPeer that speaks the protocol by hand.
#pragma once

#include <doctest/doctest.h>

#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <functional>
#include <future>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include <asio.hpp>
#include <string>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include "compression/values.h"
#include "crypto/frame_codec.h"
#include "crypto/handshake.h"
#include "gossip/messages.h"
#include "node/job/decoders.h"
#include "node/transport/asio_env.h"
#include "node/transport/envelope.h"
#include "node/transport/transport.h"

namespace murmur::node::testing {

// Where a daemon with data directory `data_dir` keeps job `job_id`'s checkpoint (node/job/job_store.h).
inline std::string JobCheckpoint(const std::string& data_dir, const std::string& job_id = "job") {
  return data_dir + "/jobs/" + job_id + "/checkpoint.bin";
}

// Removes everything the daemon of `data_dir` knows of its jobs (their
// checkpoints and the record of those that completed), as a new data
// directory would be.
inline void ForgetJobs(const std::string& data_dir) { std::filesystem::remove_all(data_dir + "/jobs"); }

// Loopback ports for the listeners a test starts later, each probed free
// now. They come from below Linux's ephemeral range (32768-60999), where
// the local port of any outgoing connection of a concurrent test could take
// a probed port before the listener binds it, and above what the shell
// tests use (20000-31999). Each process takes its ports from blocks of 64
// that it holds alone: a block is claimed with an exclusive lock on its file
// under the temporary directory, kept until the process exits, so that two
// tests running at once never probe the same port (a port probed free by
// one and not yet bound could otherwise be handed to the other as well).
inline std::vector<std::uint16_t> FreeLoopbackPorts(std::size_t n) {
  constexpr int kFirst = 12000, kBlock = 64, kBlocks = 125;  // 12000-19999
  static std::mutex mu;
  static int block = -1, next = 0;
  std::lock_guard<std::mutex> lock(mu);
  // Claims the first free block from `from` on; -1 when every block is held.
  auto claim = [](int from) {
    const std::filesystem::path dir = std::filesystem::temp_directory_path() / "murmur-test-ports";
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    for (int i = 0; i < kBlocks; ++i) {
      const int b = (from + i) % kBlocks;
      const int fd = ::open((dir / std::to_string(b)).c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
      if (fd < 0) continue;
      if (::flock(fd, LOCK_EX | LOCK_NB) == 0) return b;  // fd stays open: the lock lasts the process
      ::close(fd);
    }
    return -1;
  };
  std::vector<std::uint16_t> ports;
  for (int blocks = 0; ports.size() < n && blocks < kBlocks;) {
    if (block < 0 || next == kBlock) {
      block = claim(block < 0 ? static_cast<int>(::getpid() % kBlocks) : block + 1);
      next = 0;
      ++blocks;
      if (block < 0) break;
    }
    const auto port = static_cast<std::uint16_t>(kFirst + block * kBlock + next++);
    asio::io_context io;
    asio::ip::tcp::acceptor probe(io);
    asio::error_code ec;
    probe.open(asio::ip::tcp::v4(), ec);
    if (!ec) probe.bind({asio::ip::make_address("127.0.0.1"), port}, ec);
    if (!ec) ports.push_back(port);
  }
  REQUIRE(ports.size() == n);
  return ports;
}

// The body of GET /metrics from 127.0.0.1:port.
inline std::string Metrics(std::uint16_t port) {
  asio::io_context io;
  asio::ip::tcp::socket s(io);
  s.connect({asio::ip::make_address("127.0.0.1"), port});
  const std::string get = "GET /metrics HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
  asio::write(s, asio::buffer(get));
  std::string out;
  asio::error_code ec;
  char buf[4096];
  for (std::size_t n; (n = s.read_some(asio::buffer(buf), ec)) > 0 || !ec;) out.append(buf, n);
  return out;
}

// The value of the sample line that starts with `name` (-1 when absent).
inline double Sample(const std::string& metrics, const std::string& name) {
  const auto at = metrics.find("\n" + name + " ");
  if (at == std::string::npos) return -1;
  return std::stod(metrics.substr(at + name.size() + 2));
}

// A loopback port with nothing listening on it (connections are refused).
inline std::uint16_t ClosedPort() {
  asio::io_context io;
  asio::ip::tcp::acceptor a(io, {asio::ip::make_address("127.0.0.1"), 0});
  return a.local_endpoint().port();  // closed when `a` goes
}

// A model message of round `round`: n fp32 values that depend on the round
// and the position (so that a mixed-up message shows).
inline std::shared_ptr<const gossip::GossipMessage> DenseModel(std::uint64_t round, std::size_t n) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<float>(round) + 0.001f * static_cast<float>(i % 977);
  compression::ValueCoding f32;
  auto u = std::make_shared<const compression::Update>(
      compression::Update::Dense(n, compression::PackValues(v, {}, f32, 0)));
  return std::make_shared<gossip::GossipMessage>(gossip::Channel::kModel, round, 0.5, u);
}

inline std::int64_t UnixNow() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

inline crypto::Identity Seeded(std::uint8_t b) {
  std::array<std::uint8_t, 32> seed{};
  seed.fill(b);
  return crypto::Identity::FromSeed(seed);
}

// Credentials of identity `who` signed by `coordinator` for `network`, valid
// from a minute ago for `valid_for` seconds (negative: expired). A node or
// aggregator certificate binds node id `node` (default: `who`); an
// operator's binds none.
inline crypto::Credentials Creds(const crypto::Identity& coordinator, std::uint8_t who,
                                 const std::string& network = "fleet", std::int64_t valid_for = 3600,
                                 std::uint8_t roles = crypto::kRoleNode,
                                 std::optional<std::uint32_t> node = std::nullopt) {
  crypto::Identity id = Seeded(who);
  crypto::Certificate c;
  c.node_key = id.public_key();
  if (roles & (crypto::kRoleNode | crypto::kRoleAggregator)) c.node_id = node.value_or(who);
  c.network_id = network;
  c.roles = roles;
  c.serial = who;
  c.not_before = UnixNow() - 7200;
  c.not_after = UnixNow() + valid_for;
  REQUIRE(crypto::SignCertificate(coordinator, &c).ok());
  auto made = crypto::Credentials::Make(id, c);
  REQUIRE(made.ok());
  return *made;
}

// Credentials of identity `who` under a version 1 certificate, which binds no node id.
inline crypto::Credentials LegacyCreds(const crypto::Identity& coordinator, std::uint8_t who) {
  crypto::Credentials c = Creds(coordinator, who);
  c.certificate.version = crypto::kLegacyCertificateVersion;
  c.certificate.node_id = crypto::kNoCertifiedNode;
  REQUIRE(crypto::SignCertificate(coordinator, &c.certificate).ok());
  return c;
}

inline crypto::TrustPolicy Policy(const crypto::Identity& coordinator, const std::string& network = "fleet") {
  return crypto::TrustPolicy{network, coordinator.public_key(), crypto::kRoleNode};
}

// Polls `cond` every 5 ms for up to `limit`.
inline bool WaitFor(const std::function<bool()>& cond,
                    std::chrono::milliseconds limit = std::chrono::seconds(10)) {
  auto end = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < end) {
    if (cond()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return cond();
}

class RecordingSink final : public MessageSink {
 public:
  void OnMessage(NodeId from, MessagePtr msg) override {
    std::lock_guard<std::mutex> lock(mu_);
    got_.push_back({from, std::move(msg)});
  }
  std::vector<std::pair<NodeId, MessagePtr>> Got() const {
    std::lock_guard<std::mutex> lock(mu_);
    return got_;
  }
  std::size_t Count() const {
    std::lock_guard<std::mutex> lock(mu_);
    return got_.size();
  }

 private:
  mutable std::mutex mu_;
  std::vector<std::pair<NodeId, MessagePtr>> got_;  // guarded by mu_
};

// One node on its own io thread.
class Endpoint {
 public:
  Endpoint(NodeId id, crypto::Credentials creds, crypto::TrustPolicy policy, TransportOptions options = {},
           std::string host = "127.0.0.1")
      : work_(asio::make_work_guard(io_)) {
    options.self = id;
    options.listen_host = std::move(host);
    env_ = std::make_unique<AsioEnv>(io_, id, 1);
    env_->RegisterDecoders(JobDecoders());
    transport_ = std::make_unique<Transport>(
        io_, std::move(creds), std::move(policy), options,
        [this](NodeId from, ReceivedMessage m) { env_->OnTransportMessage(from, std::move(m)); });
    env_->SetTransport(transport_.get());
    env_->SetSink(&sink_);
    start_status_ = transport_->Start();
    thread_ = std::thread([this] { io_.run(); });
  }
  ~Endpoint() { Shutdown(); }

  void Shutdown() {
    if (!thread_.joinable()) return;
    Do([this] { transport_->Stop(); });
    work_.reset();
    io_.stop();
    thread_.join();
    env_.reset();
    transport_.reset();
  }

  // Runs `fn` on the io thread and waits for it.
  void Do(std::function<void()> fn) {
    std::promise<void> done;
    asio::post(io_, [&] {
      fn();
      done.set_value();
    });
    done.get_future().wait();
  }

  const Status& start_status() const { return start_status_; }
  std::uint16_t port() const { return transport_->port(); }
  Transport& transport() { return *transport_; }
  AsioEnv& env() { return *env_; }
  RecordingSink& sink() { return sink_; }
  asio::io_context& io() { return io_; }
  void AddPeer(const PeerAddress& p) {
    Do([&] { transport_->AddPeer(p); });
  }
  void Send(NodeId to, MessagePtr m) {
    Do([&] { env_->Send(to, m); });
  }
  bool Connected(NodeId peer) {
    bool c = false;
    Do([&] { c = transport_->IsConnected(peer); });
    return c;
  }

 private:
  asio::io_context io_;
  asio::executor_work_guard<asio::io_context::executor_type> work_;
  std::unique_ptr<AsioEnv> env_;
  std::unique_ptr<Transport> transport_;
  RecordingSink sink_;
  Status start_status_;
  std::thread thread_;
};

// A peer that speaks the protocol by hand over a blocking socket, so that it can misbehave.
class RawPeer {
 public:
  // Connects to 127.0.0.1:port from `from` (a loopback address).
  explicit RawPeer(std::uint16_t port, const std::string& from = "127.0.0.1") : socket_(io_) {
    socket_.open(asio::ip::tcp::v4());
    socket_.bind({asio::ip::make_address(from), 0});
    socket_.connect({asio::ip::make_address("127.0.0.1"), port});
  }
  void Write(const crypto::Bytes& b) { asio::write(socket_, asio::buffer(b)); }
  void WriteFrame(const crypto::Bytes& body) {
    crypto::Bytes f;
    REQUIRE(crypto::AppendFrame(body, crypto::kConnectionFrameLimits, &f).ok());
    Write(f);
  }
  crypto::Bytes ReadFrame() {
    std::uint8_t len[4];
    asio::read(socket_, asio::buffer(len));
    crypto::Bytes body(crypto::LoadU32(len));
    asio::read(socket_, asio::buffer(body));
    return body;
  }
  // Runs the initiator's side; returns the handshake's status.
  Status Handshake(const crypto::Credentials& creds, const crypto::TrustPolicy& policy) {
    crypto::SecureHandshake hs(crypto::HandshakeRole::kInitiator, creds, policy, UnixNow());
    crypto::Bytes m;
    MURMUR_RETURN_IF_ERROR(hs.WriteMessage(&m));
    WriteFrame(m);
    MURMUR_RETURN_IF_ERROR(hs.ReadMessage(ReadFrame()));
    MURMUR_RETURN_IF_ERROR(hs.WriteMessage(&m));
    WriteFrame(m);
    channel_.emplace(hs.MakeChannel());
    return Status::Ok();
  }
  crypto::Bytes Seal(const crypto::Bytes& record) {
    crypto::Bytes out;
    REQUIRE(channel_->Seal(record, &out).ok());
    return out;
  }
  // An application message of `kind` (BEGIN and CONTINUE records), after HELLO.
  void SendMessage(std::uint32_t kind, const crypto::Bytes& payload) {
    const std::size_t max = channel_->options().max_plaintext;
    for (std::size_t i = 0; i < RecordCount(payload.size(), max); ++i) {
      crypto::Bytes record;
      AppendRecord(kind, payload, max, i, &record);
      WriteFrame(Seal(record));
    }
  }
  // True when the peer closed the connection (read gives EOF or reset) within `limit`.
  bool ClosedByPeer(std::chrono::milliseconds limit = std::chrono::seconds(5)) {
    std::uint8_t b[256];
    asio::error_code ec;
    socket_.non_blocking(true);
    auto end = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < end) {
      socket_.read_some(asio::buffer(b), ec);
      if (ec && ec != asio::error::would_block) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return false;
  }

 private:
  asio::io_context io_;
  asio::ip::tcp::socket socket_;
  std::optional<crypto::SecureChannel> channel_;
};

}  // namespace murmur::node::testing
