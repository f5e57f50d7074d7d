#include "gossip/ring_allreduce.h"

#include <algorithm>
#include <cmath>

#include "core/check.h"
#include "core/log.h"
#include "core/rng.h"

namespace murmur::gossip {

RingAllReduceNode::RingAllReduceNode(Env& env, NodeId nodes, LocalLearner& learner, ParamVector x0,
                                     std::unique_ptr<Codec> codec, RingAllReduceOptions options,
                                     RoundObserver* observer)
    : env_(env),
      learner_(learner),
      codec_(std::move(codec)),
      options_(options),
      observer_(observer),
      x_(std::move(x0)),
      sum_(x_.layout()),
      outer_(options_.outer, x_.layout()) {
  if (options_.overlap) {
    MURMUR_CHECK_MSG(options_.cross.empty(), "overlap runs one ring (no groups)");
    theta_ = ParamVector(x_.layout());
    theta_.CopyFrom(x_);  // the anchor starts at x0 (a resumed node imports its own)
    start_ = ParamVector(x_.layout());
    mean_ = ParamVector(x_.layout());
  }
  MURMUR_CHECK_MSG(codec_->full_model_safe(),
                   "a ring all-reduce sends partial sums: use none, fp16, bf16 or int8");
  MURMUR_CHECK(nodes >= 1);
  if (options_.ring.empty()) {
    MURMUR_CHECK(env_.self() < nodes);
    for (NodeId i = 0; i < nodes; ++i) members_.push_back(i);
  } else {
    MURMUR_CHECK_MSG(options_.ring.size() == nodes, "the ring's order must list every node once");
    members_ = options_.ring;
  }
  MURMUR_CHECK_MSG(std::find(members_.begin(), members_.end(), env_.self()) != members_.end(),
                   "the ring's order must list every node once");
  if (options_.lowrank > 0) {
    lowrank_ = std::make_unique<LowRankReduce>(options_.lowrank_layout, x_.size(), options_.lowrank,
                                               options_.lowrank_error_feedback, options_.lowrank_seed);
    first_.assign(lowrank_->first_size(), 0.0f);
    second_.assign(lowrank_->second_size(), 0.0f);
    start_ = ParamVector(x_.layout());
  }
  ring_ = LiveRing();  // the whole ring until a round forms its own
  reform_ = options_.peer_alive && options_.cross.empty() && members_.size() <= kMaxReformedRing;
  round_ = ahead_ = options_.first_round;
}

void RingAllReduceNode::Start() {
  if (!options_.overlap) return BeginRound();
  if (finished()) return;
  if (round_ == 0) {
    phase_ = 0;
    return BeginPhase();
  }
  // Resumed after round r - 1: the state is the one taken at that round's
  // rebase, so x is round r's vector; its all-reduce and phase r + 1 begin.
  phase_ = round_ + 1;
  SetOverlapVector();
  StartReduce();
  BeginPhase();
}

void RingAllReduceNode::SetOverlapVector() {
  if (!lowrank_) return sum_.CopyFrom(x_);  // y_p = theta - d_p
  sum_.vec() = theta_.vec() - x_.vec();     // d_p, whose agreed mean moves the anchor
  lowrank_->First(sum_.span(), first_);
}

void RingAllReduceNode::FinishOverlapRound(bool averaged) {
  if (averaged && lowrank_) {
    if (options_.cross.empty())
      for (float& v : second_) v /= static_cast<float>(ring_.n);  // the mean of the Q factors
    lowrank_->Finish(second_, sum_.span());                       // the agreed progress
    mean_.vec() = theta_.vec() - sum_.vec();
  } else if (averaged) {
    mean_.vec() = sum_.vec() / static_cast<float>(ring_.n);
  } else {
    ++failed_;  // mean_ holds the node's own vector (StartReduce): its own progress
  }
  mean_ready_ = true;
  ++round_;
  if (options_.catch_up && ahead_ > round_ && ahead_ < options_.rounds) {
    MURMUR_LOG(kInfo) << "node " << env_.self() << ": catching up from round " << round_ << " to " << ahead_;
    round_ = ahead_;
    phase_ = round_;  // the phase in training is averaged in the ring's round
  }
  early_.erase(early_.begin(), early_.lower_bound({round_, 0}));
  if (round_ < options_.rounds) return TryRebase();
  // The last round: its outer step ends the run on the anchor itself.
  mean_ready_ = false;
  options_.local.Save(x_);
  StepAnchor();
  x_.CopyFrom(theta_);
  options_.local.Restore(x_);
  if (observer_ != nullptr) observer_->OnRoundDone(env_.self(), round_ - 1, loss_);
}

Result<NodeState> RingAllReduceNode::ExportState() const {
  NodeState s;
  MURMUR_RETURN_IF_ERROR(codec_->ExportState(s));
  s.Put("x", x_);
  if (options_.overlap) s.Put("theta", theta_);
  outer_.ExportState(s);
  if (lowrank_) lowrank_->ExportState(s);
  return s;
}

Status RingAllReduceNode::ImportState(const NodeState& state) {
  MURMUR_RETURN_IF_ERROR(state.Get("x", x_));
  if (options_.overlap) MURMUR_RETURN_IF_ERROR(state.Get("theta", theta_));
  MURMUR_RETURN_IF_ERROR(codec_->ImportState(state));
  if (lowrank_) MURMUR_RETURN_IF_ERROR(lowrank_->ImportState(state));
  return outer_.ImportState(state);
}

namespace {

// A segment message's scalar: the step plus kStepBase times the ring's
// fingerprint (0 for the whole ring), an exact integer in a double: steps
// below 2^24, fingerprints of 28 bits.
constexpr double kStepBase = 0x1p24;
constexpr std::uint64_t kFingerprintMask = (std::uint64_t{1} << 28) - 1;

}  // namespace

RingAllReduceNode::Ring RingAllReduceNode::LiveRing() const {
  Ring r;
  std::uint64_t h = 0;
  for (NodeId id : members_) {
    if (reform_ && id != env_.self() && !options_.peer_alive(id)) continue;
    if (id == env_.self()) r.position = static_cast<NodeId>(r.members.size());
    r.members.push_back(id);
    h = Mix64(h ^ Mix64(id + 1));
  }
  r.n = static_cast<NodeId>(r.members.size());
  r.schedule = CollectiveSchedule(options_.collective, r.n, r.position,
                                  lowrank_ ? lowrank_->first_size() : sum_.size());
  if (lowrank_) r.second = CollectiveSchedule(options_.collective, r.n, r.position, lowrank_->second_size());
  r.fingerprint = r.members.size() == members_.size() ? 0 : ((h & kFingerprintMask) | 1);
  return r;
}

void RingAllReduceNode::BeginRound() {
  if (finished()) return;
  env_.Offload(
      options_.local_steps * learner_.FlopsPerStep(),
      [this] {
        outer_.Begin(x_);
        if (lowrank_) start_.CopyFrom(x_);
        loss_ = learner_.Train(x_, options_.local_steps);
        if (!lowrank_) return sum_.CopyFrom(x_);
        sum_.vec() = start_.vec() - x_.vec();  // this round's progress
        lowrank_->First(sum_.span(), first_);
      },
      [this] { StartReduce(); });
}

void RingAllReduceNode::StartReduce() {
  reducing_ = true;
  if (options_.overlap) {  // the node's own y_p = theta - d_p, should the round fail
    if (lowrank_) {
      mean_.vec() = theta_.vec() - sum_.vec();
    } else {
      mean_.CopyFrom(sum_);
    }
  }
  step_ = 0;
  if (reform_) {  // this round's ring: the live members
    const std::uint64_t before = ring_.fingerprint;
    ring_ = LiveRing();
    if (ring_.fingerprint != before)
      MURMUR_LOG(kInfo) << "node " << env_.self() << ": round " << round_ << "'s ring is " << ring_.n
                        << " of " << members_.size() << " members";
  }
  cross_ = CrossMix::kPending;
  part_ = 0;
  if (ring_.n == 1 && options_.cross.empty() && !lowrank_) return FinishRound(true);
  if (options_.catch_up && ahead_ >= round_ + 2) return FinishRound(false);  // the ring moved on
  const std::uint64_t r = round_;
  timeout_ = env_.StartTimer(options_.round_timeout, [this, r] {
    timeout_ = 0;
    if (round_ == r && reducing_) {
      MURMUR_LOG(kInfo) << "node " << env_.self() << ": the all-reduce of round " << r
                        << " timed out at step " << step_ << "; keeping this node's own "
                        << (options_.overlap ? "progress" : "model");
      FinishRound(false);
    }
  });
  step_sent_ = false;
  TryAdvance();
}

// Overlap: phase p trains from x_ while round p - 1's all-reduce runs.
void RingAllReduceNode::BeginPhase() {
  if (phase_ >= options_.rounds) return;
  env_.Offload(
      options_.local_steps * learner_.FlopsPerStep(),
      [this] {
        start_.CopyFrom(x_);
        loss_ = learner_.Train(x_, options_.local_steps);
      },
      [this] {
        phase_done_ = true;
        TryRebase();
      });
}

// Overlap: once phase p is trained and round p - 1's mean is in, the anchor
// takes its outer step, x_ moves onto it with phase p's own progress, and
// round p's all-reduce (of x_ = theta - d_p) and phase p + 1 begin. Phase 0
// trained from the anchor itself, so its x_ is theta - d_0 already.
void RingAllReduceNode::TryRebase() {
  if (!phase_done_ || (phase_ > 0 && !mean_ready_)) return;
  phase_done_ = false;
  if (phase_ > 0) {
    mean_ready_ = false;
    sum_.vec() = start_.vec() - x_.vec();  // this phase's progress d_p
    options_.local.Save(x_);
    StepAnchor();
    x_.vec() = theta_.vec() - sum_.vec();
    options_.local.Restore(x_);
    if (observer_ != nullptr) observer_->OnRoundDone(env_.self(), phase_ - 1, loss_);
  }
  SetOverlapVector();  // round p's
  ++phase_;
  StartReduce();
  BeginPhase();
}

// The round's mean is the next anchor before the outer step: the agreed
// pseudo-gradient is theta - mean, the mean progress when the anchors agree.
void RingAllReduceNode::StepAnchor() {
  outer_.Begin(theta_);
  theta_.CopyFrom(mean_);
  outer_.Apply(theta_);  // no outer optimizer: theta = mean, local SGD's step
}

std::span<float> RingAllReduceNode::PartVector() {
  if (part_ == 1) return second_;
  return lowrank_ ? std::span<float>(first_) : sum_.span();
}

void RingAllReduceNode::BeginSecondPart() {
  // The mean of the P factors and whole tensors (with groups, the mix of
  // the groups' means is in already).
  if (options_.cross.empty())
    for (float& v : first_) v /= static_cast<float>(ring_.n);
  lowrank_->Second(first_, second_);
  part_ = 1;
  cross_ = CrossMix::kPending;
  step_sent_ = false;
}

void RingAllReduceNode::SendStep(const CollectiveStep& step, std::span<const float> vector) {
  UpdatePtr q = codec_->Compress(vector.subspan(step.send.begin, step.send.size()), round_);
  const double scalar = static_cast<double>(step_) + kStepBase * static_cast<double>(ring_.fingerprint);
  env_.Send(ring_.members[step.send_to],
            std::make_shared<const GossipMessage>(Channel::kRingSegment, round_, scalar, std::move(q)));
}

void RingAllReduceNode::OnMessage(NodeId from, MessagePtr msg) {
  if (msg->kind() != kGossipMessageKind) return;
  auto m = std::static_pointer_cast<const GossipMessage>(msg);
  if (m->channel() != Channel::kRingSegment || finished()) return;
  const double s = m->scalar();
  const double total = static_cast<double>(ring_.schedule.steps() + ring_.second.steps());
  if (!options_.cross.empty() && (s == total || (lowrank_ && s == total + 1))) {  // a counterpart's mix
    const std::size_t part = s == total ? 0 : 1;
    const std::size_t owned = (part == 0 ? ring_.schedule : ring_.second).owned().size();
    std::size_t k = 0;
    while (k < options_.cross.size() && options_.cross[k].first != from) ++k;
    if (k == options_.cross.size() || m->update().size() != owned || m->round() < round_ || owned == 0)
      return;
    // This round's and the next two's, one segment per counterpart and part each.
    if (m->round() <= round_ + 2)
      cross_early_.emplace(std::make_pair(m->round(), part * options_.cross.size() + k), m);
    return TryAdvance();
  }
  if (!(s >= 0 && s < 0x1p52) || s != std::floor(s)) return;  // no step of any ring
  const auto fingerprint = static_cast<std::uint64_t>(std::floor(s / kStepBase));
  const auto step = static_cast<std::uint64_t>(s - kStepBase * static_cast<double>(fingerprint));
  // The ring it was sent in must be this node's for that round: the one
  // formed for the round under way, or the live members as this node sees
  // them now for a round to come. Rings that differ time out and retry.
  Ring live;
  const Ring* ring = &ring_;
  if (reform_ && !(m->round() == round_ && reducing_)) {
    live = LiveRing();
    ring = &live;
  }
  const std::uint64_t first_steps = ring->schedule.steps();
  if (fingerprint != ring->fingerprint || step >= first_steps + ring->second.steps()) return;  // no step here
  const CollectiveStep expected =
      step < first_steps ? ring->schedule.At(step) : ring->second.At(step - first_steps);
  if (expected.recv_from == CollectiveStep::kNobody || from != ring->members[expected.recv_from]) return;
  if (m->update().size() != expected.recv.size()) {
    MURMUR_LOG(kWarning) << "node " << env_.self() << ": all-reduce message from " << from << " has "
                         << m->update().size() << " elements, step " << step << " needs "
                         << expected.recv.size();
    return;
  }
  if (m->round() < round_) return;  // a finished round (this node timed out of it)
  // Held: this round's and the next two's, at most one message a step each
  // (duplicates are dropped), so a predecessor running ahead, or a hostile
  // one, costs at most three models of memory. Later ones only move ahead_.
  if (m->round() <= round_ + 2) early_.emplace(std::make_pair(m->round(), step), Held{fingerprint, m});
  if (options_.catch_up) {
    std::uint64_t& latest = latest_[from];
    latest = std::max(latest, m->round());
  }
  if (options_.catch_up && m->round() > ahead_) {
    ahead_ = m->round();
    // The predecessor is two rounds ahead: this round's ring has moved on without this node.
    if (ahead_ >= round_ + 2 && reducing_) return FinishRound(false);
  }
  TryAdvance();
}

bool RingAllReduceNode::CrossMixed() {
  const NodeId m = ring_.n;
  const ValueRange owned = PartSchedule().owned();
  if (owned.size() == 0) return true;  // a position that folded holds no range: it sits the mix out
  std::span<float> seg = PartVector().subspan(owned.begin, owned.size());
  const std::size_t first_key = part_ * options_.cross.size();
  if (cross_ == CrossMix::kPending) {
    cross_ = CrossMix::kSent;
    for (float& v : seg) v /= static_cast<float>(m);  // the group's mean
    // The scalar: the steps of both parts, plus the part (docs/protocol.md).
    const double scalar = static_cast<double>(ring_.schedule.steps() + ring_.second.steps() + part_);
    for (const auto& [peer, weight] : options_.cross) {
      env_.Send(peer, std::make_shared<const GossipMessage>(
                          Channel::kRingSegment, round_, scalar,
                          codec_->Compress(std::span<const float>(seg.data(), seg.size()), round_)));
    }
  }
  for (std::size_t k = 0; k < options_.cross.size(); ++k) {
    if (cross_early_.count({round_, first_key + k}) == 0) return false;
  }
  // Every counterpart's segment is here: mix them in the order of `cross`.
  std::vector<float> mixed(seg.size(), 0.0f), theirs(seg.size());
  for (std::size_t j = 0; j < seg.size(); ++j) mixed[j] = static_cast<float>(options_.cross_self) * seg[j];
  for (std::size_t k = 0; k < options_.cross.size(); ++k) {
    auto it = cross_early_.find({round_, first_key + k});
    std::fill(theirs.begin(), theirs.end(), 0.0f);
    Status st = it->second->update().AddTo(theirs);
    MURMUR_CHECK_MSG(st.ok(), st.ToString());
    const auto w = static_cast<float>(options_.cross[k].second);
    for (std::size_t j = 0; j < seg.size(); ++j) mixed[j] += w * theirs[j];
    cross_early_.erase(it);
  }
  std::copy(mixed.begin(), mixed.end(), seg.begin());
  return true;
}

void RingAllReduceNode::TryAdvance() {
  while (reducing_) {
    const CollectiveSchedule& schedule = PartSchedule();
    const std::uint64_t local = step_ - PartBase();
    if (local == schedule.gather_step() && !options_.cross.empty() && cross_ != CrossMix::kMixed) {
      if (!CrossMixed()) return;
      cross_ = CrossMix::kMixed;  // the all-gather spreads the mixed range
    }
    if (local == schedule.steps()) {
      if (lowrank_ && part_ == 0) {
        BeginSecondPart();
        continue;
      }
      return FinishRound(true);
    }
    const CollectiveStep step = schedule.At(local);
    const std::span<float> vector = PartVector();
    if (!step_sent_) {
      step_sent_ = true;
      if (step.send_to != CollectiveStep::kNobody) SendStep(step, vector);
    }
    if (step.recv_from != CollectiveStep::kNobody) {
      auto it = early_.find({round_, step_});
      if (it == early_.end()) {
        const NodeId from = ring_.members[step.recv_from];
        if (!Gone(from)) return;
        MURMUR_LOG(kInfo) << "node " << env_.self() << ": node " << from << " has left round " << round_
                          << " without its step " << step_ << "; keeping this node's own "
                          << (options_.overlap ? "progress" : "model");
        return FinishRound(false);
      }
      if (it->second.fingerprint != ring_.fingerprint) {  // sent in another ring than this round's
        early_.erase(it);
        return;
      }
      std::span<float> range = vector.subspan(step.recv.begin, step.recv.size());
      if (step.overwrite) std::fill(range.begin(), range.end(), 0.0f);
      Status st = it->second.message->update().AddTo(range);
      MURMUR_CHECK_MSG(st.ok(), st.ToString());
      early_.erase(it);
    }
    ++step_;
    step_sent_ = false;
  }
}

// catch_up: a sender already in a later round has sent all it will send
// for this one (links deliver in order).
bool RingAllReduceNode::Gone(NodeId from) const {
  if (!options_.catch_up) return false;
  auto it = latest_.find(from);
  return it != latest_.end() && it->second > round_;
}

void RingAllReduceNode::FinishRound(bool averaged) {
  if (timeout_ != 0) {
    env_.CancelTimer(timeout_);
    timeout_ = 0;
  }
  reducing_ = false;
  if (options_.overlap) return FinishOverlapRound(averaged);
  if (averaged) {
    options_.local.Save(x_);
    if (lowrank_) {
      if (options_.cross.empty())
        for (float& v : second_) v /= static_cast<float>(ring_.n);  // the mean of the Q factors
      lowrank_->Finish(second_, sum_.span());                       // the agreed progress
      x_.vec() = start_.vec() - sum_.vec();
    } else if (options_.cross.empty()) {
      x_.vec() = sum_.vec() / static_cast<float>(ring_.n);
    } else {
      x_.CopyFrom(sum_);  // each segment is a mix of group means already
    }
    outer_.Apply(x_);
    options_.local.Restore(x_);
  } else {
    ++failed_;  // the model of the local steps stands; no outer step on it
  }
  const std::uint64_t done = round_++;
  if (options_.catch_up && ahead_ > round_ && ahead_ < options_.rounds) {
    MURMUR_LOG(kInfo) << "node " << env_.self() << ": catching up from round " << round_ << " to " << ahead_;
    round_ = ahead_;
  }
  early_.erase(early_.begin(), early_.lower_bound({round_, 0}));  // rounds that are over
  cross_early_.erase(cross_early_.begin(), cross_early_.lower_bound({round_, 0}));
  if (observer_ != nullptr) observer_->OnRoundDone(env_.self(), done, loss_);
  BeginRound();
}

}  // namespace murmur::gossip
