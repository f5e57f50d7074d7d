#include "sim/net/simulator.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <tuple>

#include "core/check.h"
#include "sim/net/sim_env.h"
#include "sim/net/tcp_model.h"

namespace murmur::sim {

namespace {
double Seconds(Nanos t) { return static_cast<double>(t.count()) * 1e-9; }
Nanos TransferTime(double bytes, double bits_per_second) {
  return Nanos(static_cast<std::int64_t>(std::ceil(bytes * 8.0 / bits_per_second * 1e9)));
}
Nanos TransferTime(std::size_t bytes, double bits_per_second) {
  return TransferTime(static_cast<double>(bytes), bits_per_second);
}

// One message in an outbox: its arrival key, ends, kind and encoding.
struct OutboxHeader {
  std::int64_t arrive_ns;
  std::int64_t first_ns;  // its first byte's arrival
  std::uint64_t sequence;
  NodeId from;
  NodeId to;
  std::uint32_t kind;
  std::uint32_t length;
};
}  // namespace

Simulator::Simulator(SimulatorOptions options, std::vector<DeviceProfile> devices)
    : options_(std::move(options)),
      devices_(std::move(devices)),
      sinks_(devices_.size(), nullptr),
      online_(devices_.size(), 1),
      traffic_(devices_.size()),
      uplink_free_(devices_.size(), Nanos(0)),
      downlink_free_(devices_.size(), Nanos(0)),
      compute_free_(devices_.size(), Nanos(0)),
      pool_(options_.threads) {
  if (options_.placement.nodes() == 0) options_.placement = Placement(static_cast<NodeId>(devices_.size()));
  MURMUR_CHECK(options_.placement.nodes() == devices_.size());
  outbox_.resize(static_cast<std::size_t>(options_.placement.ranks()));
  if (options_.online_counted == 0) options_.online_counted = static_cast<NodeId>(devices_.size());
  const std::vector<NodeId>& mine = options_.placement.local_nodes();
  totals_.online = static_cast<std::uint64_t>(
      std::lower_bound(mine.begin(), mine.end(), options_.online_counted) - mine.begin());
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

void Simulator::SetOnline(NodeId node, bool online) {
  std::uint8_t& o = online_.at(node);
  if (options_.placement.local(node) && node < options_.online_counted && o != (online ? 1 : 0)) {
    if (online) {
      ++totals_.online;
    } else {
      --totals_.online;
    }
  }
  o = online ? 1 : 0;
}

EventQueue::EventId Simulator::At(Nanos at, std::function<void()> fn) {
  MURMUR_CHECK(at >= now_);
  return queue_.Schedule(at, kWorldOrigin, std::move(fn));
}

EventQueue::EventId Simulator::AtNode(NodeId node, Nanos at, std::function<void()> fn) {
  MURMUR_CHECK(at >= now_ && node < devices_.size());
  return queue_.Schedule(at, node, std::move(fn));
}

EventQueue::EventId Simulator::AtNodeTimeline(NodeId node, Nanos at, std::function<void()> fn) {
  MURMUR_CHECK(at >= now_ && node < devices_.size());
  return queue_.Schedule(EventKey{at, node, queue_.NextTimelineSequence(node)}, std::move(fn));
}

// A message leaves through the sender's uplink (kIdeal: FIFO, it waits for
// earlier messages, then takes bytes / min(up_bps, the path's rate)), crosses
// the link (both ends' access latency, the path's and the extra latency, with
// jitter), then enters the receiver's downlink (FIFO, bytes / down_bps):
// kIdeal once its last byte arrived, kTcp as its first byte arrives. kTcp
// collects what a node sends in one event and sends it together (FlushBurst).
// Loss and jitter are drawn from the sender's own stream, in the order the
// node sent, so they do not depend on event interleaving.
void Simulator::Send(NodeId from, NodeId to, MessagePtr msg) {
  MURMUR_CHECK(to < devices_.size());
  if (!online_[from]) return;
  std::size_t bytes = msg->EncodedSize();
  TrafficStats& out = traffic_[from];
  out.bytes_sent += bytes;
  ++out.messages_sent;
  totals_.bytes_sent += bytes;
  ++totals_.messages_sent;
  const NetworkOptions& net = options_.network;
  if (net.transport == LinkTransport::kTcp) {
    auto& burst = bursts_[from];
    if (burst.empty()) {  // the node's sends of this event leave together, once it returns
      queue_.Schedule(EventKey{now_, from, queue_.NextSequence(from)}, [this, from] { FlushBurst(from); });
    }
    burst.push_back(Outgoing{to, bytes, std::move(msg)});
    return;
  }
  if (QueueFull(from, std::max(now_, uplink_free_[from]))) return Drop(to);
  Rng& rng = link_rng_[from];
  bool lost = net.message_loss > 0 && rng.Bernoulli(net.message_loss);
  lost = lost || PathDown(from, to);
  double jitter = net.jitter > 0 ? rng.Uniform(1 - net.jitter, 1 + net.jitter) : 1.0;
  const Nanos propagation = Jittered(PathLatency(from, to), jitter);
  const Nanos depart = std::max(now_, uplink_free_[from]) + TransferTime(bytes, UplinkRate(from, to));
  uplink_free_[from] = depart;
  Deliver(from, to, bytes, std::move(msg), lost, depart + propagation, depart + propagation);
}

double Simulator::UplinkRate(NodeId from, NodeId to) const {
  const LinkModel* links = options_.network.links.get();
  return links == nullptr ? devices_[from].up_bps
                          : std::min(devices_[from].up_bps, links->BpsAt(from, to, now_));
}

bool Simulator::QueueFull(NodeId, Nanos start) const {
  const Nanos bound = options_.network.max_queue;
  return bound.count() > 0 && start - now_ > bound;
}

void Simulator::Drop(NodeId to) {
  if (options_.placement.local(to)) ++traffic_[to].messages_lost;
  ++totals_.messages_lost;
}

bool Simulator::PathDown(NodeId from, NodeId to) const {
  const LinkModel* links = options_.network.links.get();
  return links != nullptr && !links->Up(from, to, now_);
}

Nanos Simulator::PathLatency(NodeId from, NodeId to) const {
  const NetworkOptions& net = options_.network;
  Nanos path = devices_[from].latency + devices_[to].latency + net.extra_latency;
  if (net.links != nullptr) path += net.links->Latency(from, to);
  return path;
}

Nanos Simulator::Jittered(Nanos path, double jitter) {
  return Nanos(static_cast<std::int64_t>(static_cast<double>(path.count()) * jitter));
}

// kTcp: the messages a node sent in one event share its uplink as parallel
// TCP connections do (processor sharing). Each holds the uplink for its
// bytes at min(up_bps, its path's rate) (a slow path holds it longer, as in
// kIdeal); sorted by that time, the j-th shortest of k ends after the times
// of those before it plus (k - j) times its own. Each also ends no sooner
// than its own connection's slow start and loss-limited rate allow
// (TcpDeparture).
void Simulator::FlushBurst(NodeId from) {
  auto found = bursts_.find(from);
  MURMUR_CHECK(found != bursts_.end());
  std::vector<Outgoing> burst = std::move(found->second);
  bursts_.erase(found);
  const NetworkOptions& net = options_.network;
  const Nanos start = std::max(now_, uplink_free_[from]);
  if (QueueFull(from, start)) {
    for (const Outgoing& m : burst) Drop(m.to);
    return;
  }
  const std::size_t k = burst.size();
  std::vector<double> rate(k);
  std::vector<Nanos> hold(k);
  std::vector<std::size_t> order(k);
  for (std::size_t i = 0; i < k; ++i) {
    rate[i] = UplinkRate(from, burst[i].to);
    hold[i] = TransferTime(TcpModel::WireBytes(static_cast<double>(burst[i].bytes)), rate[i]);
    order[i] = i;
  }
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return hold[a] < hold[b]; });
  std::vector<Nanos> shared(k);
  Nanos before{0};
  for (std::size_t j = 0; j < k; ++j) {
    const std::size_t i = order[j];
    shared[i] = start + before + hold[i] * static_cast<std::int64_t>(k - j);
    before += hold[i];
  }
  uplink_free_[from] = start + before;
  Rng& rng = link_rng_[from];
  for (std::size_t i = 0; i < k; ++i) {
    Outgoing& m = burst[i];
    bool lost = net.message_loss > 0 && rng.Bernoulli(net.message_loss);
    lost = lost || PathDown(from, m.to);
    const double jitter = net.jitter > 0 ? rng.Uniform(1 - net.jitter, 1 + net.jitter) : 1.0;
    const Nanos path = PathLatency(from, m.to);
    const Nanos propagation = Jittered(path, jitter);
    auto [leaves, depart] = TcpDeparture(from, m.to, m.bytes, start, rate[i], Seconds(path), shared[i]);
    Deliver(from, m.to, m.bytes, std::move(m.msg), lost, leaves + propagation, depart + propagation);
  }
}

void Simulator::Deliver(NodeId from, NodeId to, std::size_t bytes, MessagePtr msg, bool lost, Nanos first,
                        Nanos arrive) {
  if (lost) return Drop(to);
  const EventKey key{arrive, from, queue_.NextSequence(from)};
  if (!options_.placement.local(to)) {
    Bytes& box = outbox_[static_cast<std::size_t>(options_.placement.RankOf(to))];
    const std::size_t at = box.size();
    box.resize(at + sizeof(OutboxHeader));
    msg->EncodeTo(box);
    OutboxHeader h{arrive.count(),
                   first.count(),
                   key.sequence,
                   from,
                   to,
                   msg->kind(),
                   static_cast<std::uint32_t>(box.size() - at - sizeof(OutboxHeader))};
    MURMUR_CHECK(h.length == bytes);
    std::memcpy(box.data() + at, &h, sizeof(h));
    ++cross_rank_messages_;
    cross_rank_bytes_ += bytes;
    return;
  }
  ScheduleArrival(key, first, from, to, bytes, std::move(msg));
}

std::pair<Nanos, Nanos> Simulator::TcpDeparture(NodeId from, NodeId to, std::size_t bytes, Nanos start,
                                                double up_bps, double path, Nanos not_before) {
  const NetworkOptions& net = options_.network;
  const double wire = TcpModel::WireBytes(static_cast<double>(bytes));
  const double rtt = 2 * path;
  double rate = std::min(up_bps, devices_[to].down_bps) / 8;  // link bytes per second
  double cap = TcpModel::kMaxWindow;
  const double keep = 1 - net.packet_loss;
  const double path_loss = 1 - keep * keep;  // both access links
  if (path_loss > 0) {
    const double limited = TcpModel::LossLimitedRate(rtt, path_loss) * TcpModel::kFrameBytes / TcpModel::kMss;
    rate = std::min(rate, limited);
    cap = std::max(rate * rtt, TcpModel::kInitialWindow);
  }
  const std::uint64_t pair = (static_cast<std::uint64_t>(from) << 32) | to;
  auto [it, fresh] = connections_.try_emplace(pair, Connection{TcpModel::kInitialWindow, start});
  double window = TcpModel::kInitialWindow;
  if (!fresh) {
    // One byte stream per pair: a message starts after the one before it left.
    start = std::max(start, it->second.last);
    window = TcpModel::RestartWindow(it->second.window, Seconds(start - it->second.last), rtt,
                                     net.tcp_idle_restart);
  }
  const TcpModel::Transfer t = TcpModel::Send(wire, window, rate, rtt, cap);
  const Nanos sent =
      std::max({start + FromSeconds(t.seconds), start + TransferTime(wire, up_bps), not_before});
  Rng& rng = link_rng_[from];
  const double recovery =
      TcpModel::RecoverySeconds(std::ceil(static_cast<double>(bytes) / TcpModel::kMss), Seconds(sent - start),
                                rtt, path_loss, [&] { return rng.Uniform(); });
  const Nanos depart = sent + FromSeconds(recovery);
  it->second = Connection{t.window, depart};
  return {start, depart};
}

// The receiver's downlink serializes messages in the order they ARRIVE: a
// message still crossing a slow uplink must not hold up one from a fast
// sender that arrives before it (reserving the downlink at send time would
// queue every message behind all those sent earlier). kTcp: it starts
// receiving when the first byte arrives and ends no sooner than the last.
void Simulator::ScheduleArrival(EventKey key, Nanos first, NodeId from, NodeId to, std::size_t bytes,
                                MessagePtr msg) {
  queue_.Schedule(key, [this, first, from, to, bytes, m = std::move(msg)]() mutable {
    const double wire = options_.network.transport == LinkTransport::kTcp
                            ? TcpModel::WireBytes(static_cast<double>(bytes))
                            : static_cast<double>(bytes);
    // The downlink is busy for the message's bytes from when it can take
    // them; the message is in once that work is done and its last byte came.
    const Nanos busy = std::max(downlink_free_[to], first) + TransferTime(wire, devices_[to].down_bps);
    downlink_free_[to] = busy;
    const Nanos received = std::max(now_, busy);
    queue_.Schedule(received, to, [this, from, to, bytes, m = std::move(m)]() mutable {
      TrafficStats& in = traffic_[to];
      if (!online_[to] || sinks_[to] == nullptr || PathDown(from, to)) {
        ++in.messages_lost;
        ++totals_.messages_lost;
        return;
      }
      in.bytes_received += bytes;
      ++in.messages_received;
      totals_.bytes_received += bytes;
      sinks_[to]->OnMessage(from, std::move(m));
    });
  });
}

std::vector<Bytes> Simulator::TakeOutbox() {
  std::vector<Bytes> out(outbox_.size());
  out.swap(outbox_);
  outbox_.resize(out.size());
  return out;
}

void Simulator::Inject(const Bytes& outbox) {
  std::size_t at = 0;
  while (at < outbox.size()) {
    OutboxHeader h;
    MURMUR_CHECK(outbox.size() - at >= sizeof(h));
    std::memcpy(&h, outbox.data() + at, sizeof(h));
    at += sizeof(h);
    MURMUR_CHECK(outbox.size() - at >= h.length && options_.placement.local(h.to) &&
                 h.from < devices_.size());
    MURMUR_CHECK(Nanos(h.arrive_ns) > now_);  // never in this rank's past (the lookahead)
    auto decoded = options_.decoder
                       ? options_.decoder(h.kind, std::span(outbox.data() + at, h.length))
                       : Result<MessagePtr>(Status::Internal("no decoder for another rank's messages"));
    if (!decoded.ok()) {
      MURMUR_CHECK_MSG(false, "a message from another rank does not decode: " + decoded.status().ToString());
    }
    at += h.length;
    ScheduleArrival(EventKey{Nanos(h.arrive_ns), h.from, h.sequence}, Nanos(h.first_ns), h.from, h.to,
                    h.length, std::move(decoded).value());
  }
}

Nanos Simulator::Lookahead() const {
  if (options_.placement.nodes() < 2) return Nanos::max();
  // The two smallest access latencies: no two distinct nodes are closer (a
  // link model's paths only add to them).
  std::int64_t a = std::numeric_limits<std::int64_t>::max(), b = a;
  for (const DeviceProfile& d : devices_) {
    const std::int64_t l = d.latency.count();
    if (l < a) {
      b = a;
      a = l;
    } else if (l < b) {
      b = l;
    }
  }
  const double least =
      static_cast<double>(a + b + options_.network.extra_latency.count()) * (1 - options_.network.jitter);
  const auto l = static_cast<std::int64_t>(std::floor(least)) - 1;
  return Nanos(std::max<std::int64_t>(l, 0));
}

void Simulator::Offload(NodeId node, double flops, std::function<void()> work, std::function<void()> done) {
  pending_.push_back(PendingWork{node, flops, std::move(work), std::move(done), queue_.NextSequence(node)});
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
    queue_.Schedule(EventKey{finish, w.node, w.sequence}, std::move(w.done));
  }
}

void Simulator::RunNext() {
  auto [key, fn] = queue_.Pop();
  if (key.time > now_ && now_ >= record_from_) history_.emplace_back(now_, totals_);
  now_ = key.time;
  fn();
}

std::uint64_t Simulator::RunUntil(Nanos until) {
  MURMUR_CHECK(options_.placement.ranks() == 1);
  stopped_ = false;
  std::uint64_t ran = 0;
  for (;;) {
    // Work offloaded by the nodes' events of this instant runs together, in
    // parallel, before time moves on or the simulator's own events run.
    if (!pending_.empty() &&
        (queue_.empty() || queue_.next_time() > now_ || queue_.next_key().origin == kWorldOrigin))
      FlushWork();
    if (stopped_ || interrupted() || queue_.empty() || queue_.next_time() > until) break;
    RunNext();
    ++ran;
  }
  if (!stopped_ && !interrupted() && now_ < until && until != Nanos::max()) now_ = until;
  return ran;
}

std::uint64_t Simulator::RunBefore(Nanos end) {
  std::uint64_t ran = 0;
  for (;;) {
    if (!pending_.empty() &&
        (queue_.empty() || queue_.next_time() > now_ || queue_.next_key().origin == kWorldOrigin))
      FlushWork();
    if (queue_.empty() || queue_.next_time() >= end) break;
    RunNext();
    ++ran;
  }
  return ran;
}

Nanos Simulator::NextEventTime() {
  if (!pending_.empty()) return now_;
  return queue_.empty() ? Nanos::max() : queue_.next_time();
}

TrafficTotals Simulator::TotalsAt(Nanos at) const {
  if (now_ <= at) return totals_;
  auto it = std::upper_bound(history_.begin(), history_.end(), at,
                             [](Nanos t, const auto& entry) { return t < entry.first; });
  MURMUR_CHECK(it != history_.begin());
  return std::prev(it)->second;
}

void Simulator::RecordTotalsFrom(Nanos from) {
  record_from_ = from;
  auto keep = std::lower_bound(history_.begin(), history_.end(), from,
                               [](const auto& entry, Nanos t) { return entry.first < t; });
  history_.erase(history_.begin(), keep);
}

TrafficStats Simulator::TotalTraffic() const {
  TrafficStats t;
  for (const auto& s : traffic_) {
    t.bytes_sent += s.bytes_sent;
    t.bytes_received += s.bytes_received;
    t.messages_sent += s.messages_sent;
    t.messages_received += s.messages_received;
    t.messages_lost += s.messages_lost;
    for (std::size_t k = 0; k < kRefusalKinds; ++k) t.refused[k] += s.refused[k];
  }
  return t;
}

}  // namespace murmur::sim
