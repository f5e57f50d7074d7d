// DecentralizedSgdNode's state across restarts and rejoins
// (gossip/decentralized_sgd.h): resync with a neighbour, a late or deferred
// message absorbed, and the state a daemon checkpoints.
#include <algorithm>

#include "core/check.h"
#include "core/log.h"
#include "gossip/decentralized_sgd.h"

namespace murmur::gossip {

void DecentralizedSgdNode::SendResync(NodeId to, bool want_reply) {
  auto msg = std::make_shared<const GossipMessage>(Channel::kResync, sent_below_, want_reply ? 1.0 : 0.0,
                                                   compression::DenseF32Update(x_hat_.span()));
  env_.Send(to, msg);
}

void DecentralizedSgdNode::OnResync(NodeId from, const GossipMessage& m) {
  const NodeId self = env_.self();
  const double w = topology_.In(round_).At(self, from);
  auto held = hat_.find(from);
  if (w > 0 && held != hat_.end()) {
    ParamVector now(x_->layout());
    Status st = m.update().AddTo(now.span());
    MURMUR_CHECK_MSG(st.ok(), st.ToString());
    // Copies that agree (a whole job resuming together): the held copy plus
    // the differences of this sender still waiting here is x^_j bit for bit,
    // and everything stays as it is, so the run is the one never stopped.
    ParamVector expected = held->second.Clone();
    for (const Received& r : inbox_.HeldFrom(from)) {
      st = r.msg->update().AddTo(expected.span());
      MURMUR_CHECK_MSG(st.ok(), st.ToString());
    }
    if (!std::equal(now.span().begin(), now.span().end(), expected.span().begin())) {
      // x^_j whole: s += W_ij (x^_j - held), held = x^_j; the differences
      // waiting here are in x^_j already.
      s_.vec() += static_cast<float>(w) * (now.vec() - held->second.vec());
      held->second = std::move(now);
      const std::size_t dropped = inbox_.DropFrom(from);
      // Set, not raised: a restarted sender's copy starts over at its checkpoint.
      resynced_below_[from] = m.round();
      MURMUR_LOG(kInfo) << "node " << self << ": resynchronised its copy of node " << from
                        << "'s x^ (rounds below " << m.round() << ", " << dropped
                        << " waiting differences in it)";
    }
    if (m.round() > 0) {
      // Its last difference was of round m.round() - 1: as if that had come.
      std::uint64_t& latest = latest_[from];
      latest = std::max(latest, m.round() - 1);
      ahead_ = std::max(ahead_, Corroborated());
    }
  }
  // Answered when the asker holds a copy of this node's x^ (W_{from,self} > 0).
  if (m.scalar() != 0 && topology_.In(round_).At(from, self) > 0) SendResync(from, /*want_reply=*/false);
  if (FellBehind()) return Combine();
  MaybeCombine();
}

void DecentralizedSgdNode::Absorb(NodeId from, const compression::Update& q, float weight) {
  Status st = q.AddTo(s_.span(), weight);
  MURMUR_CHECK_MSG(st.ok(), st.ToString());
  if (!resync()) return;
  auto held = hat_.find(from);
  if (held == hat_.end()) return;
  st = q.AddTo(held->second.span());
  MURMUR_CHECK_MSG(st.ok(), st.ToString());
}

void DecentralizedSgdNode::OnLate(NodeId from, const GossipMessage& m) {
  // In CHOCO the difference still belongs in s (x^_j moved on every
  // neighbour that received it); a full model of a past round is stale.
  // (A difference a resync already holds never gets here: Dispatch drops
  // those that come after it, and the resync dropped those held before.)
  if (!choco_) return;
  double w = topology_.In(m.round()).At(env_.self(), from);
  if (w <= 0) return;
  Absorb(from, m.update(), static_cast<float>(w));
}

void DecentralizedSgdNode::Defer(NodeId from, std::shared_ptr<const GossipMessage> m) {
  deferred_.push_back(Received{from, std::move(m), -1});
}

void DecentralizedSgdNode::RunDeferred() {
  while (!deferred_.empty() && !busy()) {
    Received r = std::move(deferred_.front());
    deferred_.pop_front();
    Dispatch(r.from, std::move(r.msg));
  }
}

Result<NodeState> DecentralizedSgdNode::ExportState() const {
  NodeState s;
  MURMUR_RETURN_IF_ERROR(codec_->ExportState(s));
  s.Put("x", *x_);
  if (choco_) {
    s.Put("x_hat", x_hat_);
    s.Put("s", s_);
    if (!codec_->error_feedback()) s.Put("last_sent", last_sent_);
    for (const auto& [j, copy] : hat_) s.Put("hat/" + std::to_string(j), copy);
  }
  outer_.ExportState(s);
  return s;
}

Status DecentralizedSgdNode::ImportState(const NodeState& state) {
  MURMUR_CHECK(x_.use_count() == 1);  // before Start: no message holds x
  MURMUR_RETURN_IF_ERROR(state.Get("x", *x_));
  MURMUR_RETURN_IF_ERROR(codec_->ImportState(state));
  MURMUR_RETURN_IF_ERROR(outer_.ImportState(state));
  if (!choco_) return Status::Ok();
  MURMUR_RETURN_IF_ERROR(state.Get("x_hat", x_hat_));
  MURMUR_RETURN_IF_ERROR(state.Get("s", s_));
  if (!codec_->error_feedback()) MURMUR_RETURN_IF_ERROR(state.Get("last_sent", last_sent_));
  for (auto& [j, copy] : hat_) MURMUR_RETURN_IF_ERROR(state.Get("hat/" + std::to_string(j), copy));
  return Status::Ok();
}

}  // namespace murmur::gossip
