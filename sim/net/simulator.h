// Simulator: N nodes in one process, in virtual time.
//
// The simulator owns the event queue, a SimEnv per node (sim/net/sim_env.h), the
// simulated network and the worker pool. Node code runs unchanged against its
// SimEnv: timers become events, Send becomes a delivery event after the link's
// queueing, serialization and propagation delay (or a loss), and Offload'ed
// training steps run in parallel on the pool while virtual time charges each
// node flops / device speed.
//
// Determinism: events run in the order of their key (time, origin node, that
// node's sequence number; sim/net/event_queue.h); every random draw comes from a
// stream keyed by (seed, node, purpose); offloaded work items are
// independent, run in any order on any thread, and each completion's key is
// taken when the work is offloaded. The same seed therefore gives the same run
// for any thread count.
//
// Partitioned runs: with a Placement of several ranks, this Simulator runs the
// nodes of its rank only. A message to a node of another rank leaves in the
// outbox as its wire encoding with its event key (TakeOutbox); the receiving
// rank decodes it and queues its arrival under the same key (Inject). No
// message arrives sooner than Lookahead() after it is sent, so ranks that run
// all events before T + Lookahead() and then swap outboxes never receive an
// event in their past (RunWindows, sim/run/windows.h; docs/simulator.md).
//
// Thread-safety: drive a Simulator from one thread. Only Offload work runs on
// other threads.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/corrupted_message.h"
#include "core/env.h"
#include "core/thread_pool.h"
#include "sim/net/device.h"
#include "sim/net/event_queue.h"
#include "sim/net/links.h"
#include "sim/ranks/placement.h"
#include "sim/ranks/ranks.h"

namespace murmur::sim {

class SimEnv;

// How a message crosses a link.
enum class LinkTransport {
  // A message is a fluid at the line rates: it crosses the sender's uplink
  // (FIFO), then the path's latency, then the receiver's downlink (FIFO),
  // store and forward. The model of closed-form tests.
  kIdeal,
  // As murmurd sends it, over one TCP connection per pair of nodes
  // (sim/net/tcp_model.h): frames of 1448 payload bytes, slow start from the
  // connection's window (restarted after an idle timeout), a rate limited by
  // packet loss, and the downlink receiving while the uplink still sends
  // (cut through: the slower of the two sets the pace).
  kTcp,
};

struct NetworkOptions {
  // Probability that a whole message is lost, independently (on top of
  // churn): the link is down, the peer gone, a fault dropped it.
  double message_loss = 0.0;
  // Probability that a packet crossing a node's access link, either way, is
  // lost (kTcp only: TCP resends it, so it costs rate, not messages).
  double packet_loss = 0.0;
  LinkTransport transport = LinkTransport::kIdeal;
  // kTcp: whether an idle connection restarts slow start (Linux's
  // net.ipv4.tcp_slow_start_after_idle, 1 by default).
  bool tcp_idle_restart = true;
  // Extra one-way latency on every link, added to both ends' access latency.
  Nanos extra_latency{0};
  // Uniform jitter: each message's latency is scaled by U(1 - jitter, 1 + jitter).
  double jitter = 0.0;
  // What each pair's path adds (sim/net/links.h); null: the devices alone.
  std::shared_ptr<const LinkModel> links;
  // A bounded transmit queue: a message whose first byte would leave the
  // sender's uplink more than this after it was sent is dropped at once, as
  // a full radio queue drops it (0: no bound; a socket's sender waits).
  Nanos max_queue{0};
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
  // The nodes this simulator runs: all of them (the default, when its node
  // count is 0), or one rank's block of a partitioned run.
  Placement placement;
  // Decodes the messages that arrive from other ranks (partitioned runs only).
  WireDecoder decoder;
  // TrafficTotals::online counts this rank's nodes below this id (0: all of
  // them; a federated run counts its clients, not the servers).
  NodeId online_counted = 0;
};

// Per-node traffic counters (encoded bytes, as the real transport would send them).
struct TrafficStats {
  std::uint64_t bytes_sent = 0;
  std::uint64_t bytes_received = 0;
  std::uint64_t messages_sent = 0;
  std::uint64_t messages_received = 0;
  std::uint64_t messages_lost = 0;  // lost on the link or at an offline receiver
  // Received messages the node refused (Env::Refuse), by core::Refusal.
  std::array<std::uint64_t, kRefusalKinds> refused{};
};

// The network's totals over this simulator's nodes, and how many of them are
// online: what an evaluation point records.
struct TrafficTotals {
  std::uint64_t messages_sent = 0;
  std::uint64_t bytes_sent = 0;
  std::uint64_t bytes_received = 0;
  std::uint64_t messages_lost = 0;  // lost on the link (counted by the sender's rank) or at the receiver
  std::uint64_t online = 0;
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

  // Schedules a simulator-level event at absolute time `at`; at one instant it
  // runs after every node's events.
  EventQueue::EventId At(Nanos at, std::function<void()> fn);
  // Schedules an event on behalf of `node` (its start) at absolute time `at`.
  EventQueue::EventId AtNode(NodeId node, Nanos at, std::function<void()> fn);
  // Schedules an event of `node`'s own timeline (EventQueue::NextTimelineSequence):
  // its churn, known alike to every rank that follows it.
  EventQueue::EventId AtNodeTimeline(NodeId node, Nanos at, std::function<void()> fn);

  // Runs events until none is left, `until` is passed, Stop() is called or
  // the interrupt flag is raised. Returns the number of events run.
  // REQUIRES: one rank (a partitioned run goes through RunWindows).
  std::uint64_t RunUntil(Nanos until);

  // Runs every event before `end` (and the work they offload); `now()` is then
  // the time of the last event run. Returns the number of events run.
  std::uint64_t RunBefore(Nanos end);
  // Time of the next event (now() while offloaded work waits); Nanos::max() when none.
  Nanos NextEventTime();
  // The least time any message spends between two distinct nodes, from the
  // device latencies and the network options (jitter included), less 1 ns
  // for rounding; 0 when messages may arrive at the instant they are sent.
  Nanos Lookahead() const;
  const Placement& placement() const { return options_.placement; }
  // The encoded messages sent to each other rank since the last call, one
  // buffer per rank (this rank's is empty).
  std::vector<Bytes> TakeOutbox();
  // Queues the arrivals of another rank's outbox for this rank. A message that
  // does not decode is a bug of the sender (its own encoding): it aborts.
  void Inject(const Bytes& outbox);

  // This rank's traffic totals now, or as they were at the end of instant
  // `at`. REQUIRES for a past `at`: RecordTotalsFrom(t) with t <= at, and an
  // event of this rank at some time in [t, at].
  TrafficTotals Totals() const { return totals_; }
  // Messages and their bytes sent from this rank's nodes to other ranks'.
  std::uint64_t cross_rank_messages() const { return cross_rank_messages_; }
  std::uint64_t cross_rank_bytes() const { return cross_rank_bytes_; }
  TrafficTotals TotalsAt(Nanos at) const;
  // Keeps the totals of every instant from `from` on (Nanos::max(): none), and
  // forgets those before it.
  void RecordTotalsFrom(Nanos from);
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
    std::uint64_t sequence;  // the completion's key, taken at Offload
  };

  void Send(NodeId from, NodeId to, MessagePtr msg);
  // The arrival of a message's last byte at `to`'s downlink, scheduled under
  // `key`; its first byte reached it at `first` (kIdeal: the same instant).
  void ScheduleArrival(EventKey key, Nanos first, NodeId from, NodeId to, std::size_t bytes, MessagePtr msg);
  // kTcp: when the first and the last byte of `bytes` from `from` to `to`
  // leave, sent once the uplink is free at `start` and the pair's connection
  // has sent what it had, with propagation `path` seconds each way, the last
  // not before `not_before` (its share of the uplink).
  std::pair<Nanos, Nanos> TcpDeparture(NodeId from, NodeId to, std::size_t bytes, Nanos start, double up_bps,
                                       double path, Nanos not_before);
  // kTcp: sends what `from` sent in the event that just ran (Send).
  void FlushBurst(NodeId from);
  // A message's end: lost, or queued to arrive (first and last byte) here or
  // in another rank's outbox.
  void Deliver(NodeId from, NodeId to, std::size_t bytes, MessagePtr msg, bool lost, Nanos first,
               Nanos arrive);
  double UplinkRate(NodeId from, NodeId to) const;
  // Both access latencies, the path's and the extra latency.
  Nanos PathLatency(NodeId from, NodeId to) const;
  // Whether the link model says the path from -> to is down now (sim/net/links.h Up).
  bool PathDown(NodeId from, NodeId to) const;
  // Whether a message of `from` whose first byte leaves at `start` finds its
  // transmit queue full (NetworkOptions::max_queue); Drop counts it lost.
  bool QueueFull(NodeId from, Nanos start) const;
  void Drop(NodeId to);
  // `path` scaled by a jitter draw, truncated to the nanosecond.
  static Nanos Jittered(Nanos path, double jitter);
  // Pops and runs the next event.
  void RunNext();
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
  struct Connection {
    double window;  // congestion window, bytes
    Nanos last;     // when its last byte left
  };
  // kTcp: each sender's connections, by receiver (held by the sender's rank).
  std::unordered_map<std::uint64_t, Connection> connections_;
  struct Outgoing {
    NodeId to;
    std::size_t bytes;
    MessagePtr msg;
  };
  // kTcp: what each node sent in the event running now, sent when it returns.
  std::unordered_map<NodeId, std::vector<Outgoing>> bursts_;
  std::vector<PendingWork> pending_;
  std::vector<Bytes> outbox_;  // per rank
  TrafficTotals totals_;
  std::uint64_t cross_rank_messages_ = 0;
  std::uint64_t cross_rank_bytes_ = 0;
  Nanos record_from_ = Nanos::max();
  std::vector<std::pair<Nanos, TrafficTotals>> history_;  // totals at the end of each recorded instant
  EventQueue queue_;
  ThreadPool pool_;
  Nanos now_{0};
  bool stopped_ = false;
};

}  // namespace murmur::sim
