#include "sim/net/simulator.h"

#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include "sim/net/churn.h"
#include "tests/sim/messages.h"

namespace murmur::sim {
namespace {

using testing::Blob;
using testing::Profile;
using testing::Recorder;

TEST_CASE("A message's delivery time is uplink serialization + both latencies + downlink serialization") {
  // 10 kB over an 8 Mbit/s uplink (10 ms), 5 + 3 ms latency, 16 Mbit/s downlink (5 ms).
  Simulator sim({}, {Profile(8e6, 1e9, 5), Profile(1e9, 16e6, 3)});
  Recorder rec(&sim);
  sim.SetSink(1, &rec);
  sim.env(0).Send(1, std::make_shared<Blob>(10'000));
  sim.env(0).Send(1, std::make_shared<Blob>(10'000));  // queues behind the first on the uplink
  sim.RunUntil(Nanos::max());
  REQUIRE(rec.arrivals.size() == 2);
  CHECK(rec.arrivals[0] == Nanos(10'000'000 + 8'000'000 + 5'000'000));
  // The second leaves the uplink at 20 ms, arrives at 28 ms, downlink is free by then.
  CHECK(rec.arrivals[1] == Nanos(20'000'000 + 8'000'000 + 5'000'000));
  CHECK(sim.traffic(0).bytes_sent == 20'000);
  CHECK(sim.traffic(1).bytes_received == 20'000);
}

TEST_CASE("A shared downlink serializes messages from two senders") {
  Simulator sim({}, {Profile(1e12, 1e12, 0), Profile(1e12, 1e12, 0), Profile(1e12, 8e6, 0)});
  Recorder rec(&sim);
  sim.SetSink(2, &rec);
  sim.env(0).Send(2, std::make_shared<Blob>(1000));  // 1 ms on the downlink
  sim.env(1).Send(2, std::make_shared<Blob>(1000));
  sim.RunUntil(Nanos::max());
  REQUIRE(rec.arrivals.size() == 2);
  CHECK(std::abs((rec.arrivals[0] - Nanos(1'000'000)).count()) <= 20);  // plus 8 ns on the 1 Tbit/s uplink
  CHECK(std::abs((rec.arrivals[1] - Nanos(2'000'000)).count()) <= 20);  // plus 8 ns on the 1 Tbit/s uplink
}

TEST_CASE("The downlink serves messages in arrival order, not send order") {
  // Node 0 sends first over a 1 Mbit/s uplink (10 kB: 80 ms); node 1 sends
  // 10 kB a moment later over 1 Gbit/s (80 us). Both reach node 2's 80 Mbit/s
  // downlink (1 ms each); node 1's message arrives first and is not held
  // behind the one still crossing node 0's uplink.
  Simulator sim({}, {Profile(1e6, 1e12, 0), Profile(1e9, 1e12, 0), Profile(1e12, 80e6, 0)});
  Recorder rec(&sim);
  sim.SetSink(2, &rec);
  sim.env(0).Send(2, std::make_shared<Blob>(10'000));
  sim.env(1).Send(2, std::make_shared<Blob>(10'000));
  sim.RunUntil(Nanos::max());
  REQUIRE(rec.arrivals.size() == 2);
  CHECK(rec.senders[0] == 1);
  CHECK(std::abs((rec.arrivals[0] - Nanos(80'000 + 1'000'000)).count()) <= 20);
  CHECK(rec.senders[1] == 0);
  CHECK(std::abs((rec.arrivals[1] - Nanos(80'000'000 + 1'000'000)).count()) <= 20);
}

TEST_CASE("Link loss matches its probability (binomial, 5 sigma)") {
  SimulatorOptions opts;
  opts.network.message_loss = 0.1;
  opts.seed = 3;
  Simulator sim(opts, std::vector<DeviceProfile>(2));
  Recorder rec(&sim);
  sim.SetSink(1, &rec);
  const int n = 20000;
  for (int i = 0; i < n; ++i) sim.env(0).Send(1, std::make_shared<Blob>(10));
  sim.RunUntil(Nanos::max());
  double lost = static_cast<double>(sim.traffic(1).messages_lost);
  double sigma = std::sqrt(n * 0.1 * 0.9);
  CHECK(std::abs(lost - n * 0.1) < 5 * sigma);
  CHECK(rec.arrivals.size() + sim.traffic(1).messages_lost == static_cast<std::size_t>(n));
}

TEST_CASE("Timers, cancellation and offline receivers") {
  Simulator sim({}, std::vector<DeviceProfile>(2));
  Recorder rec(&sim);
  sim.SetSink(1, &rec);
  std::string log;
  sim.env(0).StartTimer(Nanos(50), [&] { log += "b"; });
  sim.env(0).StartTimer(Nanos(10), [&] { log += "a"; });
  TimerId gone = sim.env(0).StartTimer(Nanos(20), [&] { log += "x"; });
  sim.env(0).CancelTimer(gone);
  sim.SetOnline(1, false);
  sim.env(0).Send(1, std::make_shared<Blob>(1));
  sim.RunUntil(Nanos(30));
  CHECK(log == "a");
  CHECK(sim.now() == Nanos(30));
  sim.RunUntil(Nanos::max());
  CHECK(log == "ab");
  CHECK(rec.arrivals.empty());
  CHECK(sim.traffic(1).messages_lost == 1);
}

// A protocol that offloads random work and gossips its results; its whole
// trace must be identical for 1 and 4 threads.
struct Worker final : MessageSink {
  Worker(Simulator* s, NodeId id) : sim(s), self(id), rng(s->env(id).MakeRng(RngPurpose::kGeneric)) {}
  void Start() { Step(); }
  void Step() {
    if (++steps > 20) return;
    auto result = std::make_shared<double>(0);
    sim->env(self).Offload(
        1e6 * (1 + rng.UniformInt(10)),
        [this, result] {
          double acc = 0;
          Rng local = rng.Fork(static_cast<std::uint64_t>(steps));
          for (int i = 0; i < 1000; ++i) acc += local.Normal();
          *result = acc;
        },
        [this, result] {
          value += *result;
          NodeId to =
              static_cast<NodeId>((self + 1 + rng.UniformInt(sim->num_nodes() - 1)) % sim->num_nodes());
          sim->env(self).Send(to, std::make_shared<Blob>(100 + rng.UniformInt(1000), steps));
          Step();
        });
  }
  void OnMessage(NodeId from, MessagePtr) override {
    trace += std::to_string(sim->now().count()) + ":" + std::to_string(from) + ";";
  }
  Simulator* sim;
  NodeId self;
  Rng rng;
  int steps = 0;
  double value = 0;
  std::string trace;
};

std::string RunWorkers(int threads) {
  SimulatorOptions opts;
  opts.threads = threads;
  opts.seed = 42;
  opts.network.message_loss = 0.05;
  opts.network.jitter = 0.2;
  auto devices = MakeDeviceProfiles("phone:0.5,iot:0.5", 16, 42).value();
  Simulator sim(opts, devices);
  std::vector<std::unique_ptr<Worker>> workers;
  for (NodeId i = 0; i < 16; ++i) {
    workers.push_back(std::make_unique<Worker>(&sim, i));
    sim.SetSink(i, workers.back().get());
  }
  for (auto& w : workers) w->Start();
  sim.RunUntil(Nanos::max());
  std::string all;
  for (auto& w : workers) all += std::to_string(w->value) + "|" + w->trace + "\n";
  return all;
}

TEST_CASE("Offloaded work charges flops / device speed and runs the same for any thread count") {
  std::string one = RunWorkers(1);
  CHECK(one == RunWorkers(4));
  CHECK(one.size() > 1000);

  DeviceProfile p;
  p.flops_per_s = 2e9;
  Simulator sim({}, {p});
  Nanos done_at{-1};
  sim.env(0).Offload(
      5e8, [] {}, [&] { done_at = sim.now(); });
  sim.env(0).Offload(
      5e8, [] {}, [] {});  // serialized behind the first
  Nanos second{-1};
  sim.env(0).Offload(
      1e9, [] {}, [&] { second = sim.now(); });
  sim.RunUntil(Nanos::max());
  CHECK(done_at == Nanos(250'000'000));
  CHECK(second == Nanos(1'000'000'000));
}

TEST_CASE("Markov churn keeps nodes online for their availability fraction") {
  SimulatorOptions opts;
  opts.seed = 5;
  std::vector<DeviceProfile> devices(200);
  for (auto& d : devices) d.availability = 0.7;
  Simulator sim(opts, devices);
  ChurnOptions co;
  co.mean_online = std::chrono::seconds(10);
  const Nanos horizon = std::chrono::seconds(2000);
  double online_time = 0;
  Nanos last{0};
  int online_count = 0;
  int transitions = 0;
  StartMarkovChurn(sim, co, horizon, [&](NodeId, bool) { ++transitions; });
  for (NodeId i = 0; i < 200; ++i) online_count += sim.online(i);
  // Sample the online count every second.
  for (int t = 1; t <= 2000; ++t) {
    sim.At(std::chrono::seconds(t), [&] {
      int c = 0;
      for (NodeId i = 0; i < 200; ++i) c += sim.online(i);
      online_time += c * static_cast<double>((sim.now() - last).count());
      last = sim.now();
    });
  }
  sim.RunUntil(horizon);
  double fraction = online_time / (200.0 * static_cast<double>(horizon.count()));
  CHECK(fraction == doctest::Approx(0.7).epsilon(0.03));
  CHECK(transitions > 1000);
  CHECK(online_count > 100);
}

}  // namespace
}  // namespace murmur::sim
