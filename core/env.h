// Env: everything a node needs from the world: the clock, timers, sending
// messages, randomness and a place to run heavy work.
//
// Node logic (gossip, federated) is written against Env only: no sockets,
// threads, sleeps or wall clocks. The simulator implements Env with a
// discrete-event queue in virtual time (sim/net/sim_env.h); the daemon implements
// it with Asio (node/transport/asio_env.h); tests use ManualEnv (core/manual_env.h).
// The same node code therefore runs unchanged in all three.
//
// Threading contract: an Env calls a node (timer callbacks, message delivery,
// Offload completions) from one logical executor at a time, so node code needs
// no locks. Env methods may only be called from that executor.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "core/rng.h"

namespace murmur {

using NodeId = std::uint32_t;
inline constexpr NodeId kNoNode = 0xFFFFFFFFu;

// Time since the Env started (virtual in the simulator, steady clock in the daemon).
using Nanos = std::chrono::nanoseconds;
using TimerId = std::uint64_t;

// Seconds as the configs and scenarios write them, in Env time (truncated to the nanosecond).
inline Nanos FromSeconds(double s) { return Nanos(static_cast<std::int64_t>(s * 1e9)); }

// An immutable message. The simulator moves it between nodes as a shared
// pointer without copying or encoding, charging EncodedSize() bytes to the
// links; the real transport calls EncodeTo. The two must agree exactly.
class Message {
 public:
  virtual ~Message() = default;
  // A small integer naming the message kind (see proto/ for the wire types).
  virtual std::uint32_t kind() const = 0;
  // Exact number of bytes EncodeTo appends.
  virtual std::size_t EncodedSize() const = 0;
  // Appends the wire encoding to `out`.
  virtual void EncodeTo(std::vector<std::uint8_t>& out) const = 0;
};
using MessagePtr = std::shared_ptr<const Message>;

// Why a node refused a message a peer sent it, after it decoded
// (docs/security.md "Insiders"): what the receiver checked before using it.
// The message is dropped, never mixed or aggregated; the Env counts the
// refusal by reason and, in a daemon, books it against the sender.
enum class Refusal : std::uint8_t {
  kWrongLength,    // an update whose size is not the model's
  kWrongEncoding,  // an update format the job's codec never sends (a sparse update in a dense job)
  kNotFinite,      // NaN or infinite values
  kImplausible,    // beyond the plausibility bound (a model far from the receiver's own, an absurd weight)
  kNotAggregator,  // federated control from a node that is not the job's aggregator
  kBadShares,      // SecAgg+ shares that did not open at two or more of the sender's neighbours
};
inline constexpr std::size_t kRefusalKinds = 6;
// "wrong_length", "wrong_encoding", "not_finite", "implausible", "not_aggregator", "bad_shares":
// the label of the daemon's metric and the simulator's report.
const char* RefusalName(Refusal why);

// Receives messages addressed to a node.
class MessageSink {
 public:
  virtual ~MessageSink() = default;
  virtual void OnMessage(NodeId from, MessagePtr msg) = 0;
};

class Env {
 public:
  virtual ~Env() = default;

  virtual NodeId self() const = 0;
  virtual Nanos Now() const = 0;

  // Calls `fn` once, `delay` from now (on the node's executor). Returns an id for CancelTimer.
  virtual TimerId StartTimer(Nanos delay, std::function<void()> fn) = 0;
  // Cancels a pending timer; a timer that already fired or was cancelled is ignored.
  virtual void CancelTimer(TimerId id) = 0;

  // Sends `msg` to `to`, best effort: it may be delayed, reordered or lost.
  // Delivery is to the peer's MessageSink::OnMessage.
  virtual void Send(NodeId to, MessagePtr msg) = 0;

  // The random stream for (run seed, self(), purpose).
  virtual Rng MakeRng(RngPurpose purpose) const = 0;

  // Runs `work` where heavy computation belongs (a worker pool), then `done`
  // on the node's executor. `flops` is the work's size in floating-point
  // operations: the simulator turns it into virtual compute time with the
  // node's device profile; a real Env ignores it. `work` must touch only state
  // that no other callback touches until `done` runs. The default runs both inline.
  virtual void Offload(double flops, std::function<void()> work, std::function<void()> done) {
    (void)flops;
    work();
    done();
  }

  // A message of `from` was refused for `why` (see Refusal). The default
  // ignores it; the simulator counts it, a daemon counts, logs and books it.
  virtual void Refuse(NodeId from, Refusal why) {
    (void)from;
    (void)why;
  }
};

}  // namespace murmur
