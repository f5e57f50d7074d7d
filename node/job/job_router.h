// JobRouter: where a daemon's job messages go (docs/daemon.md, "Which job a
// message belongs to"; docs/protocol.md, section 7.3). Messages of kind 0x30 carry the
// tag of the job that sent them (node/job/job_message.h). While a job runs, a
// message with its tag is unwrapped and handed to the job's sink; one with
// another tag (a stopped job's straggler, an earlier job's message with the
// same round number) and a bare job-kind message (no tag, so no job's) are
// dropped and counted (other_job(), the murmur_messages_other_job_total
// metric), with a warning at most every 10 s. While no job runs, gossip
// messages are kept (at most 256, the oldest dropped first): a peer that got
// the next job first may already have sent its first rounds. When that job
// starts, DeliverEarly hands it the kept messages with its tag, of its first
// two rounds, that came at most 10 s before; the kept ones of another tag are
// dropped and counted.
//
// Thread-safety: one thread (the daemon's io thread); other_job() may be read
// from any thread. The sink must stay alive while it is the running job's.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>

#include "core/env.h"

namespace murmur::node {

class JobRouter {
 public:
  static constexpr std::size_t kMaxEarlyMessages = 256;
  static constexpr Nanos kMaxEarlyAge = std::chrono::seconds(10);
  static constexpr Nanos kLogInterval = std::chrono::seconds(10);

  // `now` is the daemon's clock (kept messages' ages, the log's rate limit).
  JobRouter(NodeId self, std::function<Nanos()> now) : self_(self), now_(std::move(now)) {}

  // From now on messages with `tag` go to `sink` (null: no job runs, and
  // gossip messages are kept until the next job).
  void Run(std::uint64_t tag, MessageSink* sink) {
    tag_ = tag;
    sink_ = sink;
  }
  void Idle() { sink_ = nullptr; }

  // Hands the running job the kept messages of its tag, gossip rounds
  // first_round and first_round + 1 and CHOCO resynchronisations of any
  // round, at most kMaxEarlyAge old, and forgets
  // the rest. No effect when no job runs.
  void DeliverEarly(std::uint64_t first_round);

  // A message of a job kind or kind 0x30 from the transport.
  void OnMessage(NodeId from, MessagePtr msg);

  std::uint64_t other_job() const { return other_job_.load(std::memory_order_relaxed); }
  std::size_t kept() const { return early_.size(); }

 private:
  struct Early {
    NodeId from;
    std::uint64_t tag;
    MessagePtr inner;
    Nanos at;
  };
  // Counts a message of another job (or of none) and logs at the rate limit.
  void CountOther(NodeId from, std::uint32_t kind, const char* why);

  NodeId self_;
  std::function<Nanos()> now_;
  std::uint64_t tag_ = 0;
  MessageSink* sink_ = nullptr;
  std::deque<Early> early_;
  std::atomic<std::uint64_t> other_job_{0};
  std::uint64_t logged_ = 0;  // other_job_ when the last warning was written
  Nanos last_log_ = Nanos::min();
};

}  // namespace murmur::node
