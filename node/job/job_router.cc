#include "node/job/job_router.h"

#include "core/log.h"
#include "gossip/messages.h"
#include "node/job/job_message.h"

namespace murmur::node {

void JobRouter::CountOther(NodeId from, std::uint32_t kind, const char* why) {
  const std::uint64_t n = other_job_.fetch_add(1, std::memory_order_relaxed) + 1;
  const Nanos now = now_();
  if (last_log_ != Nanos::min() && now - last_log_ < kLogInterval) return;
  MURMUR_LOG(kWarning) << "node " << self_ << ": dropped a message of kind " << kind << " from node " << from
                       << " (" << why << "); " << (n - logged_) << " such since the last warning, " << n
                       << " in all";
  last_log_ = now;
  logged_ = n;
}

void JobRouter::OnMessage(NodeId from, MessagePtr msg) {
  if (msg->kind() != kJobMessageKind) return CountOther(from, msg->kind(), "no job tag");
  const auto& wrapped = static_cast<const JobMessage&>(*msg);
  if (sink_ != nullptr) {
    if (wrapped.tag() != tag_) return CountOther(from, wrapped.inner()->kind(), "another job's tag");
    return sink_->OnMessage(from, wrapped.inner());
  }
  if (wrapped.inner()->kind() != gossip::kGossipMessageKind) return;
  if (early_.size() == kMaxEarlyMessages) early_.pop_front();
  early_.push_back({from, wrapped.tag(), wrapped.inner(), now_()});
}

void JobRouter::DeliverEarly(std::uint64_t first_round) {
  std::deque<Early> early;
  early.swap(early_);
  if (sink_ == nullptr) return;
  const Nanos now = now_();
  for (Early& e : early) {
    if (e.tag != tag_) {
      CountOther(e.from, e.inner->kind(), "another job's tag, kept before this job started");
      continue;
    }
    const auto& m = static_cast<const gossip::GossipMessage&>(*e.inner);
    // A CHOCO resynchronisation is for whatever round the job is in.
    const bool any_round = m.channel() == gossip::Channel::kResync;
    if (now - e.at > kMaxEarlyAge || (!any_round && (m.round() < first_round || m.round() > first_round + 1)))
      continue;
    sink_->OnMessage(e.from, std::move(e.inner));
  }
}

}  // namespace murmur::node
