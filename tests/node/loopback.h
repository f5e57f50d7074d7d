// Test harness for node/: credentials signed by a test coordinator, and an
// Endpoint (io_context + Transport + AsioEnv on its own thread) that records
// the messages it receives.
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

#include "crypto/handshake.h"
#include "node/job/decoders.h"
#include "node/transport/asio_env.h"
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
// from a minute ago for `valid_for` seconds (negative: expired).
inline crypto::Credentials Creds(const crypto::Identity& coordinator, std::uint8_t who,
                                 const std::string& network = "fleet", std::int64_t valid_for = 3600,
                                 std::uint8_t roles = crypto::kRoleNode) {
  crypto::Identity id = Seeded(who);
  crypto::Certificate c;
  c.node_key = id.public_key();
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

}  // namespace murmur::node::testing
