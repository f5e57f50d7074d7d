#include "gossip/gradient_tracking.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>

#include "core/check.h"
#include "core/log.h"

namespace murmur::gossip {

GradientTrackingNode::GradientTrackingNode(Env& env, RoundTopology& topology, LocalLearner& learner,
                                           ParamVector x0, std::unique_ptr<Codec> codec,
                                           GradientTrackingOptions options, RoundObserver* observer)
    : env_(env),
      topology_(topology),
      learner_(learner),
      codec_(std::move(codec)),
      options_(options),
      admission_(codec_->codec_spec(), options_.plausibility),
      observer_(observer),
      x_(std::move(x0)) {
  MURMUR_CHECK_MSG(codec_->full_model_safe(),
                   "gradient tracking sends whole vectors: use none, fp16, bf16 or int8");
  y_ = ParamVector(x_.layout());
  g_old_ = ParamVector(x_.layout());
  g_new_ = ParamVector(x_.layout());
  half_ = ParamVector(x_.layout());
  acc_x_ = ParamVector(x_.layout());
  acc_y_ = ParamVector(x_.layout());
  if (options_.catch_up) fix_ = ParamVector(x_.layout());
  round_ = ahead_ = options_.first_round;
  if (options_.catch_up) lead_ = topology_.InNeighbourLead(env_.self());
  if (round_ > 0) inbox_.Close(round_ - 1);  // earlier rounds are over
}

Result<NodeState> GradientTrackingNode::ExportState() const {
  NodeState s;
  MURMUR_RETURN_IF_ERROR(codec_->ExportState(s));
  s.Put("x", x_);
  s.Put("y", y_);
  s.Put("g", g_old_);
  if (options_.catch_up) {
    s.Put("fix", fix_);
    for (const auto& [j, rounds] : mixed_) s.scalars["mixed/" + std::to_string(j)] = AckMask(j);
    for (const auto& [j, by_round] : unmatched_) {
      for (const auto& [r, c] : by_round)
        s.Put("unmatched/" + std::to_string(j) + "/" + std::to_string(r), c);
    }
  }
  return s;
}

namespace {
// "<prefix><j>" or "<prefix><j>/<r>": j (< n) and r; false when the name is not of that form.
bool ParseIds(const std::string& name, const std::string& prefix, std::size_t n, NodeId& j,
              std::uint64_t* r) {
  if (name.rfind(prefix, 0) != 0) return false;
  const char* p = name.c_str() + prefix.size();
  char* end = nullptr;
  const unsigned long long id = std::strtoull(p, &end, 10);
  if (end == p || id >= n) return false;
  j = static_cast<NodeId>(id);
  if (r == nullptr) return *end == '\0';
  if (*end != '/') return false;
  p = end + 1;
  *r = std::strtoull(p, &end, 10);
  return end != p && *end == '\0';
}

// An acknowledgement mask: an integer in [0, 2^kAckRounds).
bool ValidMask(double mask) {
  return mask >= 0 && mask < std::ldexp(1.0, GradientTrackingNode::kAckRounds) && mask == std::floor(mask);
}
}  // namespace

Status GradientTrackingNode::ImportState(const NodeState& state) {
  MURMUR_RETURN_IF_ERROR(state.Get("x", x_));
  own2_ = -1;
  MURMUR_RETURN_IF_ERROR(state.Get("y", y_));
  MURMUR_RETURN_IF_ERROR(state.Get("g", g_old_));
  MURMUR_RETURN_IF_ERROR(codec_->ImportState(state));
  if (options_.catch_up) {
    // A state without them (saved with catch_up off) starts with none.
    if (state.vectors.count("fix") != 0) MURMUR_RETURN_IF_ERROR(state.Get("fix", fix_));
    mixed_.clear();
    unmatched_.clear();
    for (const auto& [name, mask] : state.scalars) {
      NodeId j = 0;
      if (!ParseIds(name, "mixed/", topology_.size(), j, nullptr)) continue;
      if (!ValidMask(mask)) return Status::InvalidArgument("DSGT state: '" + name + "' is not a round mask");
      const auto bits = static_cast<std::uint64_t>(mask);
      for (std::uint64_t b = 0; b < kAckRounds && b < round_; ++b) {
        if ((bits >> b) & 1) mixed_[j].insert(round_ - 1 - b);
      }
    }
    for (const auto& [name, v] : state.vectors) {
      NodeId j = 0;
      std::uint64_t r = 0;
      if (name.rfind("unmatched/", 0) != 0) continue;
      if (!ParseIds(name, "unmatched/", topology_.size(), j, &r) || r >= round_)
        return Status::InvalidArgument(
            "DSGT state: '" + name + "' does not name a node of the topology and a round before the state's");
      ParamVector c(x_.layout());
      MURMUR_RETURN_IF_ERROR(state.Get(name, c));
      unmatched_[j][r] = std::move(c);
    }
  }
  ready_ = true;
  return Status::Ok();
}

// Bit b: this node mixed j's vectors of round round_ - 1 - b.
double GradientTrackingNode::AckMask(NodeId j) const {
  auto it = mixed_.find(j);
  if (it == mixed_.end()) return 0;
  std::uint64_t bits = 0;
  for (std::uint64_t r : it->second) {
    if (r < round_ && round_ - 1 - r < kAckRounds) bits |= std::uint64_t{1} << (round_ - 1 - r);
  }
  return static_cast<double>(bits);
}

// j's tracker message of `round` says which of its rounds before `round`
// mixed this node's vectors: a mix of j's vectors in a round j did not mix
// ours comes out of y again (at the end of the round in progress).
void GradientTrackingNode::OnAck(NodeId j, std::uint64_t round, double mask) {
  auto it = unmatched_.find(j);
  if (it == unmatched_.end()) return;
  if (!ValidMask(mask)) {
    MURMUR_LOG(kWarning) << "node " << env_.self() << ": tracker message from " << j
                         << " carries no round mask (scalar " << mask << ")";
    return;
  }
  const auto bits = static_cast<std::uint64_t>(mask);
  auto& by_round = it->second;
  for (auto r = by_round.begin(); r != by_round.end() && r->first < round;) {
    const std::uint64_t b = round - 1 - r->first;
    if (b < kAckRounds && ((bits >> b) & 1) == 0) {
      MURMUR_LOG(kDebug) << "node " << env_.self() << ": neighbour " << j << " did not mix round " << r->first
                         << "; taking its vectors out of the tracker";
      fix_.vec() -= r->second.vec();
      if (!combining_ && (finished() || !sent_)) {  // no round in progress: now
        y_.vec() += fix_.vec();
        fix_.SetZero();
      }
    }
    // Matched, taken out, or too old for any mask to tell (kept).
    r = by_round.erase(r);
  }
}

void GradientTrackingNode::Start() {
  if (ready_) return BeginRound();  // restored: y and g are already there
  // y_0 = g(x_0).
  env_.Offload(
      learner_.FlopsPerStep(), [this] { loss_ = learner_.Gradient(x_, g_old_); },
      [this] {
        y_.CopyFrom(g_old_);
        ready_ = true;
        BeginRound();
      });
}

void GradientTrackingNode::BeginRound() {
  if (finished()) return;
  sent_ = false;
  const float eta = static_cast<float>(learner_.LearningRate(round_));
  // half = x - eta y (x + (-eta y): the same roundings), and in the same pass
  // ||x||^2, which the neighbours' models of this round are judged against.
  own2_ = BlockSquaredNormPlusScaled(x_.span(), y_.span(), -eta, half_.span());
  auto mx = std::make_shared<const GossipMessage>(Channel::kModel, round_, 0.0,
                                                  codec_->Compress(half_.span(), round_));
  auto my = std::make_shared<const GossipMessage>(Channel::kTracker, round_, 0.0,
                                                  codec_->Compress(y_.span(), round_));
  const NodeId self = env_.self();
  for (const auto& e : topology_.Out(round_).Row(self)) {
    if (e.col == self) continue;
    env_.Send(e.col, mx);
    if (options_.catch_up) {  // the same y, with what this node mixed of the receiver's
      env_.Send(e.col, std::make_shared<const GossipMessage>(Channel::kTracker, round_, AckMask(e.col),
                                                             my->update_ptr()));
    } else {
      env_.Send(e.col, my);
    }
  }
  sent_ = true;
  const std::uint64_t r = round_;
  timeout_ = env_.StartTimer(options_.round_timeout, [this, r] {
    timeout_ = 0;
    if (round_ != r || !sent_) return;
    if (options_.catch_up) CountSilent();
    Combine();
  });
  MaybeCombine();
}

void GradientTrackingNode::OnMessage(NodeId from, MessagePtr msg) {
  if (msg->kind() != kGossipMessageKind) return;
  auto m = std::static_pointer_cast<const GossipMessage>(msg);
  if (m->channel() != Channel::kModel && m->channel() != Channel::kTracker) return;
  // Values are judged when combined (MixJudged), models' here too when no
  // distance bound is set.
  const bool values = m->channel() == Channel::kModel && admission_.plausibility() <= 0;
  if (auto why = admission_.Check(m->update(), x_.size(), false, values)) {
    env_.Refuse(from, *why);
    return;
  }
  if (options_.catch_up && m->channel() == Channel::kTracker &&
      topology_.In(m->round()).At(env_.self(), from) > 0)
    OnAck(from, m->round(), m->scalar());
  if (options_.catch_up) MaybeWaitAgain(from, m->round());
  if (m->round() < inbox_.closed_below()) return;
  if (topology_.In(m->round()).At(env_.self(), from) <= 0) return;
  if (inbox_.Has(m->round(), m->channel(), from)) return;
  // Beyond any round a neighbour can legitimately be at, one round per
  // sender is held, its highest (what a catch-up there would combine).
  // (With catch-up, as on murmurd; a simulated node's neighbours may run
  // ahead past timeouts and every round they send is still mixed.)
  if (options_.catch_up && !inbox_.KeepHighestAbove(from, round_ + lead_ + 1, m->round())) return;
  if (options_.catch_up) {
    std::uint64_t& latest = latest_[from];
    latest = std::max(latest, m->round());
    // Only a strict majority of the in-neighbours moves the catch-up target
    // (and only a round past it can: the majority's round is one of theirs).
    if (m->round() > ahead_) ahead_ = std::max(ahead_, topology_.MajorityRound(round_, env_.self(), latest_));
  }
  inbox_.Add(from, std::move(m));
  MaybeCombine();
}

// catch_up: the highest round seen from `j` (0 when none, or catch_up off).
std::uint64_t GradientTrackingNode::Latest(NodeId j) const {
  auto it = latest_.find(j);
  return it == latest_.end() ? 0 : it->second;
}

bool GradientTrackingNode::Waited(NodeId j) const {
  if (Latest(j) > round_) return false;  // gone past this round: its vectors will not come
  if (!options_.catch_up) return true;
  // One whose vectors of the last round came is running, whatever the membership view says.
  const bool alive = !options_.peer_alive || options_.peer_alive(j) || Latest(j) + 1 >= round_;
  return alive && !silent_.Silent(j);
}

void GradientTrackingNode::CountSilent() {
  const NodeId self = env_.self();
  for (const auto& e : topology_.In(round_).Row(self)) {
    if (e.col == self || !Waited(e.col)) continue;
    if (inbox_.Has(round_, Channel::kModel, e.col) && inbox_.Has(round_, Channel::kTracker, e.col)) continue;
    if (silent_.Missed(e.col, round_)) {
      MURMUR_LOG(kWarning) << "node " << self << ": neighbour " << e.col << " sent nothing for "
                           << SilentNeighbours::kRounds
                           << " rounds in a row while counted alive; its rounds no longer wait for it until "
                              "vectors of it are combined again (docs/security.md, Insiders)";
    }
  }
}

void GradientTrackingNode::MaybeWaitAgain(NodeId j, std::uint64_t round) {
  // A neighbour that lags is waited for again when nothing else is, so that
  // the node does not run on alone (gossip/silence.h).
  silent_.WaitAgain(env_.self(), j, round, topology_.In(round_).Row(env_.self()),
                    [this](NodeId e) { return Waited(e); });
}

void GradientTrackingNode::MaybeCombine() {
  if (finished() || !sent_) return;
  // catch_up: a neighbour two rounds ahead will not send this round's vectors again.
  if (options_.catch_up && ahead_ > round_ + lead_) return Combine();
  const NodeId self = env_.self();
  std::size_t expected = 0;
  for (const auto& e : topology_.In(round_).Row(self)) {
    if (e.col == self) continue;
    // catch_up: a neighbour already past this round without its vectors here
    // sent them before this node was listening (a restart); they will not come.
    const bool has =
        inbox_.Has(round_, Channel::kModel, e.col) && inbox_.Has(round_, Channel::kTracker, e.col);
    if (has || Waited(e.col)) ++expected;
  }
  if (inbox_.Count(round_, Channel::kModel) >= expected &&
      inbox_.Count(round_, Channel::kTracker) >= expected) {
    Combine();
  }
}

std::optional<Refusal> GradientTrackingNode::MixModel(const compression::Update& u, float wij) {
  const float* v = u.dense_f32();
  if (admission_.plausibility() > 0) {
    if (own2_ < 0) own2_ = BlockSquaredNorm(x_.span());
    if (v != nullptr) {
      // Mixed and measured in one pass; most models are within the bound
      // whatever their distance, and only the rest are judged in full.
      const double theirs2 = AddScaledSquaredNorm(acc_x_.data(), v, u.size(), wij);
      if (admission_.SurelyPlausible(theirs2, own2_)) return std::nullopt;
      return admission_.Judge({v, u.size()}, x_.span());
    }
    if (auto why = admission_.JudgeUpdate(u, x_.span(), scratch_)) return why;
  }
  Status st = u.AddTo(acc_x_.span(), wij);
  MURMUR_CHECK_MSG(st.ok(), st.ToString());
  return std::nullopt;
}

void GradientTrackingNode::Combine() {
  if (timeout_ != 0) {
    env_.CancelTimer(timeout_);
    timeout_ = 0;
  }
  sent_ = false;
  const NodeId self = env_.self();
  const auto& w = topology_.In(round_);
  std::vector<Received> got = inbox_.Close(round_);
  std::sort(got.begin(), got.end(), [](const Received& a, const Received& b) {
    return a.from != b.from ? a.from < b.from : a.msg->channel() < b.msg->channel();
  });
  for (const Received& r : got) silent_.Answered(r.from);
  acc_x_.SetZero();
  acc_y_.SetZero();
  double got_x = 0, got_y = 0;
  std::vector<char> refused(got.size(), 0);
  const auto tracker = [&](std::size_t k) { return got[k].msg->channel() == Channel::kTracker; };
  const auto add = [&](std::size_t k, ParamVector& acc) {
    Status st = got[k].msg->update().AddTo(acc.span(), static_cast<float>(w.At(self, got[k].from)));
    MURMUR_CHECK_MSG(st.ok(), st.ToString());
  };
  // Trackers must be finite (gradient estimates, whose honest spread near an
  // optimum is large next to their own norm, get no distance bound). A
  // non-finite one makes their sum non-finite: only then is each looked at,
  // and the sum taken again without those refused.
  for (std::size_t k = 0; k < got.size(); ++k)
    if (tracker(k)) add(k, acc_y_);
  if (!AllFinite(acc_y_.span())) {
    acc_y_.SetZero();
    for (std::size_t k = 0; k < got.size(); ++k) {
      if (!tracker(k)) continue;
      if (auto why = admission_.Check(got[k].msg->update(), x_.size(), false, true)) {
        env_.Refuse(got[k].from, *why);  // its weight stays on this node's own tracker
        refused[k] = 1;
        continue;
      }
      add(k, acc_y_);
    }
  }
  // Models, each judged in the pass that mixes it (MixModel); one judged out
  // leaves their sum to be taken again without it.
  bool redo = false;
  for (std::size_t k = 0; k < got.size(); ++k) {
    const Received& r = got[k];
    const double wij = w.At(self, r.from);
    if (refused[k]) continue;
    if (!tracker(k)) {
      if (auto why = MixModel(r.msg->update(), static_cast<float>(wij))) {
        env_.Refuse(r.from, *why);  // its weight stays on this node's own model
        refused[k] = 1;
        redo = true;
      } else {
        got_x += wij;
      }
      continue;
    }
    got_y += wij;
    if (options_.catch_up) {
      // What mixing y_j added to y_i over leaving its weight on y_i: W_ij (y_j - y_i).
      ParamVector c(x_.layout());
      Status st = r.msg->update().AddTo(c.span(), static_cast<float>(wij));
      MURMUR_CHECK_MSG(st.ok(), st.ToString());
      c.vec() -= static_cast<float>(wij) * y_.vec();
      unmatched_[r.from][round_] = std::move(c);
      auto& rounds = mixed_[r.from];
      rounds.insert(round_);
      while (!rounds.empty() && *rounds.begin() + kAckRounds < round_ + 1) rounds.erase(rounds.begin());
    }
  }
  if (redo) {
    acc_x_.SetZero();
    for (std::size_t k = 0; k < got.size(); ++k)
      if (!refused[k] && !tracker(k)) add(k, acc_x_);
  }
  // Weight of missing neighbours falls back on the node's own vectors.
  acc_x_.vec() += static_cast<float>(1.0 - got_x) * half_.vec();
  acc_y_.vec() += static_cast<float>(1.0 - got_y) * y_.vec();
  std::swap(x_, acc_x_);
  own2_ = -1;  // x moved
  combining_ = true;
  env_.Offload(
      learner_.FlopsPerStep(), [this] { loss_ = learner_.Gradient(x_, g_new_); },
      [this] {
        y_.vec() = acc_y_.vec() + g_new_.vec() - g_old_.vec();
        std::swap(g_old_, g_new_);
        combining_ = false;
        if (options_.catch_up) {
          y_.vec() += fix_.vec();
          fix_.SetZero();
        }
        const std::uint64_t done = round_++;
        if (options_.catch_up && ahead_ >= round_ + lead_ && ahead_ < options_.rounds) {
          // The skipped rounds: this node mixed nothing of them and its
          // neighbours, past them, mixed nothing of its; their vectors go.
          MURMUR_LOG(kInfo) << "node " << env_.self() << ": catching up from round " << round_ << " to "
                            << ahead_;
          inbox_.CloseThrough(ahead_ - 1);
          round_ = ahead_;
        }
        if (observer_ != nullptr) observer_->OnRoundDone(env_.self(), done, loss_);
        BeginRound();
      });
}

}  // namespace murmur::gossip
