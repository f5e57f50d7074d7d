#include "sim/simulator.h"

#include <algorithm>
#include <cmath>

#include "core/check.h"
#include "sim/sim_env.h"

namespace murmur::sim {

namespace {
Nanos TransferTime(std::size_t bytes, double bits_per_second) {
  return Nanos(
      static_cast<std::int64_t>(std::ceil(static_cast<double>(bytes) * 8.0 / bits_per_second * 1e9)));
}
}  // namespace

Simulator::Simulator(SimulatorOptions options, std::vector<DeviceProfile> devices)
    : options_(options),
      devices_(std::move(devices)),
      sinks_(devices_.size(), nullptr),
      online_(devices_.size(), 1),
      traffic_(devices_.size()),
      uplink_free_(devices_.size(), Nanos(0)),
      downlink_free_(devices_.size(), Nanos(0)),
      compute_free_(devices_.size(), Nanos(0)),
      pool_(options.threads) {
  envs_.reserve(devices_.size());
  link_rng_.reserve(devices_.size());
  for (std::size_t i = 0; i < devices_.size(); ++i) {
    envs_.push_back(std::make_unique<SimEnv>(this, static_cast<NodeId>(i)));
    link_rng_.emplace_back(options_.seed, i, RngPurpose::kNetwork);
  }
}

Simulator::~Simulator() = default;

Env& Simulator::env(NodeId node) { return *envs_.at(node); }

void Simulator::SetSink(NodeId node, MessageSink* sink) { sinks_.at(node) = sink; }

void Simulator::SetOnline(NodeId node, bool online) { online_.at(node) = online ? 1 : 0; }

EventQueue::EventId Simulator::At(Nanos at, std::function<void()> fn) {
  MURMUR_CHECK(at >= now_);
  return queue_.Schedule(at, std::move(fn));
}

// A message leaves through the sender's uplink (FIFO: it waits for earlier
// messages, then takes bytes / up_bps), crosses the link (both ends' access
// latency plus the extra latency, with jitter), then enters the receiver's
// downlink (FIFO, bytes / down_bps). Loss is decided at sending time from the
// sender's own stream, so it does not depend on event interleaving.
void Simulator::Send(NodeId from, NodeId to, MessagePtr msg) {
  MURMUR_CHECK(to < devices_.size());
  if (!online_[from]) return;
  std::size_t bytes = msg->EncodedSize();
  TrafficStats& out = traffic_[from];
  out.bytes_sent += bytes;
  ++out.messages_sent;
  Rng& rng = link_rng_[from];
  bool lost = options_.network.loss > 0 && rng.Bernoulli(options_.network.loss);
  double jitter = options_.network.jitter > 0
                      ? rng.Uniform(1 - options_.network.jitter, 1 + options_.network.jitter)
                      : 1.0;
  const DeviceProfile& src = devices_[from];
  const DeviceProfile& dst = devices_[to];
  Nanos depart = std::max(now_, uplink_free_[from]) + TransferTime(bytes, src.up_bps);
  uplink_free_[from] = depart;
  if (lost) {
    ++traffic_[to].messages_lost;
    return;
  }
  auto propagation =
      static_cast<double>((src.latency + dst.latency + options_.network.extra_latency).count()) * jitter;
  Nanos arrive = depart + Nanos(static_cast<std::int64_t>(propagation));
  // The receiver's downlink serializes messages in the order they ARRIVE: a
  // message still crossing a slow uplink must not hold up one from a fast
  // sender that arrives before it (reserving the downlink here, at send time,
  // would queue every message behind all those sent earlier).
  queue_.Schedule(arrive, [this, from, to, bytes, m = std::move(msg)]() mutable {
    const Nanos received = std::max(now_, downlink_free_[to]) + TransferTime(bytes, devices_[to].down_bps);
    downlink_free_[to] = received;
    queue_.Schedule(received, [this, from, to, bytes, m = std::move(m)]() mutable {
      TrafficStats& in = traffic_[to];
      if (!online_[to] || sinks_[to] == nullptr) {
        ++in.messages_lost;
        return;
      }
      in.bytes_received += bytes;
      ++in.messages_received;
      sinks_[to]->OnMessage(from, std::move(m));
    });
  });
}

void Simulator::Offload(NodeId node, double flops, std::function<void()> work, std::function<void()> done) {
  pending_.push_back(PendingWork{node, flops, std::move(work), std::move(done)});
}

// Runs every pending work item on the pool, then schedules each completion at
// the time its node's processor finishes it (work on one node is serialized).
void Simulator::FlushWork() {
  std::vector<PendingWork> batch;
  batch.swap(pending_);
  if (options_.serial_work) {
    for (PendingWork& w : batch) w.work();
  } else {
    pool_.ParallelFor(batch.size(), 1, [&](std::size_t b, std::size_t e) {
      for (std::size_t i = b; i < e; ++i) batch[i].work();
    });
  }
  for (PendingWork& w : batch) {
    Nanos start = std::max(now_, compute_free_[w.node]);
    Nanos finish = start + Nanos(static_cast<std::int64_t>(w.flops / devices_[w.node].flops_per_s * 1e9));
    compute_free_[w.node] = finish;
    queue_.Schedule(finish, std::move(w.done));
  }
}

std::uint64_t Simulator::RunUntil(Nanos until) {
  stopped_ = false;
  std::uint64_t ran = 0;
  for (;;) {
    // Work offloaded by the events of this instant runs together, in parallel,
    // before time moves on.
    if (!pending_.empty() && (queue_.empty() || queue_.next_time() > now_)) FlushWork();
    if (stopped_ || interrupted() || queue_.empty() || queue_.next_time() > until) break;
    auto [time, fn] = queue_.Pop();
    now_ = time;
    fn();
    ++ran;
  }
  if (!stopped_ && !interrupted() && now_ < until && until != Nanos::max()) now_ = until;
  return ran;
}

TrafficStats Simulator::TotalTraffic() const {
  TrafficStats t;
  for (const auto& s : traffic_) {
    t.bytes_sent += s.bytes_sent;
    t.bytes_received += s.bytes_received;
    t.messages_sent += s.messages_sent;
    t.messages_received += s.messages_received;
    t.messages_lost += s.messages_lost;
  }
  return t;
}

}  // namespace murmur::sim
