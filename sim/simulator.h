// Simulator: N nodes in one process, in virtual time.
//
// The simulator owns the event queue, a SimEnv per node (sim/sim_env.h), the
// simulated network and the worker pool. Node code runs unchanged against its
// SimEnv: timers become events, Send becomes a delivery event after the link's
// queueing, serialization and propagation delay (or a loss), and Offload'ed
// training steps run in parallel on the pool while virtual time charges each
// node flops / device speed.
//
// Determinism: events run in (time, scheduling order); every random draw comes
// from a stream keyed by (seed, node, purpose); offloaded work items are
// independent, run in any order on any thread, and their completions are
// scheduled in the order they were offloaded. The same seed therefore gives
// the same run for any thread count.
//
// Thread-safety: drive a Simulator from one thread. Only Offload work runs on
// other threads.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "core/env.h"
#include "core/thread_pool.h"
#include "sim/device.h"
#include "sim/event_queue.h"

namespace murmur::sim {

class SimEnv;

struct NetworkOptions {
  // Probability that any message is lost, independently (on top of churn).
  double loss = 0.0;
  // Extra one-way latency on every link, added to both ends' access latency.
  Nanos extra_latency{0};
  // Uniform jitter: each message's latency is scaled by U(1 - jitter, 1 + jitter).
  double jitter = 0.0;
};

struct SimulatorOptions {
  std::uint64_t seed = 1;
  int threads = 1;  // worker threads for Offload'ed work; results do not depend on it
  NetworkOptions network;
  // Run Offload'ed work on the thread that drives the simulator, in the order
  // it was offloaded, rather than on the pool (work that must not run
  // concurrently, such as learners written in Python).
  bool serial_work = false;
  // When set, RunUntil stops before the next event once it holds true
  // (interrupted() then says so). Must outlive the simulator.
  const std::atomic<bool>* interrupt = nullptr;
};

// Per-node traffic counters (encoded bytes, as the real transport would send them).
struct TrafficStats {
  std::uint64_t bytes_sent = 0;
  std::uint64_t bytes_received = 0;
  std::uint64_t messages_sent = 0;
  std::uint64_t messages_received = 0;
  std::uint64_t messages_lost = 0;  // lost on the link or at an offline receiver
};

class Simulator {
 public:
  Simulator(SimulatorOptions options, std::vector<DeviceProfile> devices);
  ~Simulator();
  Simulator(const Simulator&) = delete;
  Simulator& operator=(const Simulator&) = delete;

  std::size_t num_nodes() const { return devices_.size(); }
  Env& env(NodeId node);
  const DeviceProfile& device(NodeId node) const { return devices_.at(node); }

  // Where messages to `node` are delivered. The sink must outlive the run.
  void SetSink(NodeId node, MessageSink* sink);

  // Churn: an offline node neither sends nor receives (its messages are lost).
  void SetOnline(NodeId node, bool online);
  bool online(NodeId node) const { return online_[node] != 0; }

  // Schedules a simulator-level event (evaluation, churn, mobility) at absolute time `at`.
  EventQueue::EventId At(Nanos at, std::function<void()> fn);

  // Runs events until none is left, `until` is passed, Stop() is called or
  // the interrupt flag is raised. Returns the number of events run.
  std::uint64_t RunUntil(Nanos until);
  void Stop() { stopped_ = true; }
  // Whether the options' interrupt flag is raised.
  bool interrupted() const {
    return options_.interrupt != nullptr && options_.interrupt->load(std::memory_order_relaxed);
  }

  Nanos now() const { return now_; }
  const TrafficStats& traffic(NodeId node) const { return traffic_[node]; }
  TrafficStats TotalTraffic() const;
  ThreadPool& pool() { return pool_; }
  std::uint64_t seed() const { return options_.seed; }

 private:
  friend class SimEnv;
  struct PendingWork {
    NodeId node;
    double flops;
    std::function<void()> work;
    std::function<void()> done;
  };

  void Send(NodeId from, NodeId to, MessagePtr msg);
  void Offload(NodeId node, double flops, std::function<void()> work, std::function<void()> done);
  void FlushWork();

  SimulatorOptions options_;
  std::vector<DeviceProfile> devices_;
  std::vector<std::unique_ptr<SimEnv>> envs_;
  std::vector<MessageSink*> sinks_;
  std::vector<std::uint8_t> online_;
  std::vector<TrafficStats> traffic_;
  std::vector<Nanos> uplink_free_;    // when each node's uplink finishes its queue
  std::vector<Nanos> downlink_free_;  // when each node's downlink finishes its queue
  std::vector<Nanos> compute_free_;   // when each node's processor is idle again
  std::vector<Rng> link_rng_;         // per sender: loss and jitter draws
  std::vector<PendingWork> pending_;
  EventQueue queue_;
  ThreadPool pool_;
  Nanos now_{0};
  bool stopped_ = false;
};

}  // namespace murmur::sim
