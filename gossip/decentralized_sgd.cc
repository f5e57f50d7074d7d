#include "gossip/decentralized_sgd.h"

#include <algorithm>
#include <atomic>
#include <cmath>

#include "core/check.h"
#include "core/log.h"
#include "robust/rules.h"

namespace murmur::gossip {

namespace {
double SelfWeight(const topology::MixingMatrix& w, NodeId i) { return w.At(i, i); }

// acc = own x + sum_k weights[k] inputs[k], in one fused pass over cache-sized
// blocks that reads each input once and writes the result once. An input
// with codes[k] set is int8 codes instead (inputs[k] unused), added as
// Update::AddTo adds them: (weights[k] s) v, s its scale block's scale. With
// `d2`, each block of each input is also judged (gossip/admission.h) while
// it is in cache: (*d2)[k] and *own2 get the squared distances and own norm.
void MixDense(float own, const ParamVector& x, const std::vector<const float*>& inputs,
              const std::vector<float>& weights, ParamVector& acc, std::vector<double>* d2 = nullptr,
              double* own2 = nullptr, const std::vector<const compression::PackedValues*>* codes = nullptr) {
  constexpr std::size_t kBlock = kAdmissionBlock;
  const std::size_t n = x.size();
  if (d2 != nullptr) {
    d2->assign(inputs.size(), 0.0);
    *own2 = 0;
  }
  std::vector<float> decoded(codes != nullptr ? kBlock : 0);
  for (std::size_t b = 0; b < n; b += kBlock) {
    const std::size_t len = std::min(kBlock, n - b);
    Eigen::Map<Eigen::VectorXf> out(acc.data() + b, static_cast<Eigen::Index>(len));
    out = own * Eigen::Map<const Eigen::VectorXf>(x.data() + b, static_cast<Eigen::Index>(len));
    for (std::size_t k = 0; k < inputs.size(); ++k) {
      const float* in = inputs[k] + (inputs[k] != nullptr ? b : 0);
      if (codes != nullptr && (*codes)[k] != nullptr) {
        // int8: its values (s v, for the judging) and its addends, scale block by scale block.
        const compression::PackedValues& v = *(*codes)[k];
        const std::size_t per_scale = v.coding.block;
        for (std::size_t lo = b; lo < b + len;) {
          const std::size_t block = lo / per_scale, hi = std::min(b + len, (block + 1) * per_scale);
          const float s = v.scales[block], ws = weights[k] * s;
          for (std::size_t i = lo; i < hi; ++i) {
            const auto code = static_cast<float>(static_cast<std::int8_t>(v.payload[i]));
            decoded[i - b] = s * code;
            acc[i] += ws * code;
          }
          lo = hi;
        }
        in = decoded.data();
      } else {
        out += weights[k] * Eigen::Map<const Eigen::VectorXf>(in, static_cast<Eigen::Index>(len));
      }
      if (d2 != nullptr) AddBlockDistances(in, x.data() + b, len, (*d2)[k], k == 0 ? own2 : nullptr);
    }
  }
}

// Makes `v` a buffer no message shares, so it may be written: keeps it when
// the node is its only holder, else replaces it by a fresh one (its values
// are then unspecified; callers overwrite them).
void Exclusive(std::shared_ptr<ParamVector>& v) {
  if (v.use_count() == 1) {
    // The last other holder released it with a release decrement; this
    // fence orders its reads before our writes.
    std::atomic_thread_fence(std::memory_order_acquire);
    return;
  }
  v = std::make_shared<ParamVector>(v->layout());
}
}  // namespace

DecentralizedSgdNode::DecentralizedSgdNode(Env& env, RoundTopology& topology, LocalLearner& learner,
                                           ParamVector x0, std::unique_ptr<Codec> codec,
                                           DecentralizedSgdOptions options, RoundObserver* observer)
    : env_(env),
      topology_(topology),
      learner_(learner),
      codec_(std::move(codec)),
      options_(options),
      observer_(observer),
      choco_(!codec_->full_model_safe()),
      admission_(codec_->codec_spec(), options_.plausibility),
      x_(std::make_shared<ParamVector>(std::move(x0))),
      outer_(options_.outer, x_->layout()) {
  MURMUR_CHECK_MSG(!choco_ || topology_.is_static(),
                   "CHOCO (compressed differences) needs a static topology");
  MURMUR_CHECK_MSG(!choco_ || options_.mixing.rule == MixingRule::kMean,
                   "robust mixing needs whole models (a full-model codec)");
  if (choco_) {
    // x^ starts at zero on every node and so does s (Koloskova et al.), and
    // the first rounds send the model itself, a little at a time; with a
    // common x0, x^_j = x0 for all j and s = sum_j W_ij x0 = x0 instead.
    x_hat_ = options_.common_init ? x_->Clone() : ParamVector(x_->layout());
    s_ = options_.common_init ? x_->Clone() : ParamVector(x_->layout());
    if (!codec_->error_feedback()) last_sent_ = x_hat_.Clone();
    if (resync()) {
      const NodeId self = env_.self();
      for (const auto& e : topology_.In(0).Row(self)) {
        if (e.col != self) hat_.emplace(e.col, x_hat_.Clone());  // every x^_j starts as x^_i does
      }
    }
  } else {
    acc_ = std::make_shared<ParamVector>(x_->layout());
  }
  if (options_.order == MixOrder::kCombineThenAdapt) delta_ = ParamVector(x_->layout());
  MURMUR_CHECK_MSG(!outer_.active() || options_.order == MixOrder::kAdaptThenCombine,
                   "DiLoCo mixes after its inner phase");
  round_ = ahead_ = sent_below_ = options_.first_round;
  if (options_.catch_up) lead_ = topology_.InNeighbourLead(env_.self());
  if (round_ > 0) inbox_.Close(round_ - 1);  // earlier rounds are over
}

void DecentralizedSgdNode::Start() {
  epoch_ = env_.Now() - options_.round_period * static_cast<std::int64_t>(options_.first_round);
  if (resync() && options_.first_round > 0) {
    // Resuming: the neighbours' copies of x^_i and this node's of theirs may
    // be off by what was sent while it was down or since its checkpoint.
    const NodeId self = env_.self();
    std::vector<NodeId> peers;
    for (const auto& e : topology_.In(round_).Row(self)) peers.push_back(e.col);
    for (const auto& e : topology_.Out(round_).Row(self)) peers.push_back(e.col);
    std::sort(peers.begin(), peers.end());
    peers.erase(std::unique(peers.begin(), peers.end()), peers.end());
    for (NodeId to : peers) {
      if (to != self) SendResync(to, /*want_reply=*/true);
    }
  }
  BeginRound();
}

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
  deferred_.push_back(Received{from, std::move(m)});
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

UpdatePtr DecentralizedSgdNode::PrepareOutgoing() {
  if (!choco_) {
    if (!codec_->lossless_fp32()) return codec_->Compress(x_->span(), round_);
    // The message shares x (aliasing x_'s ownership); x is not written again
    // until every receiver has dropped it (see Exclusive).
    return std::make_shared<const compression::Update>(
        compression::Update::SharedDenseF32(std::shared_ptr<const float>(x_, x_->data()), x_->size()));
  }
  // With error feedback, q = C(x - x^): whatever C left out of earlier rounds
  // is still in x - x^. Without it, q = C(x - x_sent), the change since the
  // last send, and what C leaves out is lost (the ablation of Koloskova et
  // al. 2019, Sec. 6). Either way x^ += q, as on every neighbour.
  const ParamVector& base = codec_->error_feedback() ? x_hat_ : last_sent_;
  UpdatePtr q = codec_->CompressDifference(x_->span(), base.span(), round_);
  if (!codec_->error_feedback()) last_sent_.CopyFrom(*x_);
  Status st = q->AddTo(x_hat_.span());
  MURMUR_CHECK_MSG(st.ok(), st.ToString());
  return q;
}

void DecentralizedSgdNode::BeginRound() {
  if (finished()) return;
  if (options_.round_period.count() > 0) {
    const Nanos at = epoch_ + options_.round_period * static_cast<std::int64_t>(round_);
    if (env_.Now() < at) {
      env_.StartTimer(at - env_.Now(), [this] { BeginRound(); });
      return;
    }
  }
  sent_ = false;
  trained_ = false;
  const double train_flops = options_.local_steps * learner_.FlopsPerStep();
  const double codec_flops = codec_->FlopsPerElement() * static_cast<double>(x_->size());
  preparing_ = true;
  if (options_.order == MixOrder::kAdaptThenCombine) {
    env_.Offload(
        train_flops + codec_flops,
        [this] {
          MURMUR_CHECK(x_.use_count() == 1);  // no message holds x while it trains
          outer_.Begin(*x_);
          loss_ = learner_.Train(*x_, options_.local_steps);
          outgoing_ = PrepareOutgoing();
        },
        [this] {
          trained_ = true;
          preparing_ = false;
          Send(std::move(outgoing_));
          RunDeferred();
          MaybeCombine();
        });
    return;
  }
  // CTA: send the current model first, then train while it travels.
  env_.Offload(
      codec_flops, [this] { outgoing_ = PrepareOutgoing(); },
      [this, train_flops] {
        preparing_ = false;
        Send(std::move(outgoing_));
        RunDeferred();
        env_.Offload(
            train_flops,
            [this] {
              delta_.CopyFrom(*x_);
              loss_ = learner_.Train(delta_, options_.local_steps);
              delta_.vec() -= x_->vec();
            },
            [this] {
              trained_ = true;
              MaybeCombine();
            });
      });
}

void DecentralizedSgdNode::Send(UpdatePtr q) {
  const NodeId self = env_.self();
  auto msg = std::make_shared<const GossipMessage>(Channel::kModel, round_, 0.0, q);
  for (const auto& e : topology_.Out(round_).Row(self)) {
    if (e.col != self) env_.Send(e.col, msg);
  }
  if (choco_) {
    Status st = q->AddTo(s_.span(), static_cast<float>(SelfWeight(topology_.In(round_), self)));
    MURMUR_CHECK_MSG(st.ok(), st.ToString());
  }
  sent_ = true;
  sent_below_ = round_ + 1;
  ArmTimeout();
}

void DecentralizedSgdNode::ArmTimeout() {
  const std::uint64_t r = round_;
  timeout_ = env_.StartTimer(options_.round_timeout, [this, r] {
    timeout_ = 0;
    if (round_ == r && sent_ && trained_ && !mixing_) {
      MURMUR_LOG(kDebug) << "node " << env_.self() << " round " << r << " timed out waiting for neighbours";
      if (options_.catch_up) CountSilent();
      Combine();
    }
  });
}

void DecentralizedSgdNode::OnMessage(NodeId from, MessagePtr msg) {
  if (msg->kind() != kGossipMessageKind) return;
  auto m = std::static_pointer_cast<const GossipMessage>(msg);
  if (m->channel() == Channel::kResync && !resync()) return;
  if (m->channel() != Channel::kModel && m->channel() != Channel::kResync) return;
  // Checked before anything is held or used (gossip/admission.h); the
  // plausibility of a whole model is judged when it is mixed. A resync
  // carries x^_j whole, in fp32 whatever the codec.
  const bool resync_msg = m->channel() == Channel::kResync;
  // Whole models are judged when mixed (MixFull); the rest have their values checked now.
  const bool values = choco_ || resync_msg || admission_.plausibility() <= 0;
  if (auto refused = admission_.Check(m->update(), x_->size(), resync_msg, values)) {
    env_.Refuse(from, *refused);
    // A refused model is the neighbour's answer for its round, an empty one:
    // the round does not wait for it until round_timeout.
    // Only rounds a neighbour may legitimately be at are kept, so a flood of
    // refused messages for far rounds holds nothing.
    if (m->channel() == Channel::kModel && m->round() >= round_ && m->round() <= round_ + lead_ &&
        topology_.In(m->round()).At(env_.self(), from) > 0) {
      refused_.emplace(m->round(), from);
      MaybeCombine();
    }
    return;
  }
  // Messages that wait keep their order: a resync replaces what came before
  // it from its sender, not what came after.
  if (!deferred_.empty()) return Defer(from, std::move(m));
  Dispatch(from, std::move(m));
}

void DecentralizedSgdNode::Dispatch(NodeId from, std::shared_ptr<const GossipMessage> m) {
  const NodeId self = env_.self();
  if (m->channel() == Channel::kResync) {
    // It reads x^ (written while the outgoing difference is computed) and
    // writes s (read while mixing).
    if (busy()) return Defer(from, std::move(m));
    return OnResync(from, *m);
  }
  if (resync()) {
    auto below = resynced_below_.find(from);
    if (below != resynced_below_.end() && m->round() < below->second) return;  // in the resynced copy
  }
  if (m->round() < inbox_.closed_below()) {
    if (!choco_) return;                            // a full model of a past round is stale
    if (mixing_) return Defer(from, std::move(m));  // s is being read
    return OnLate(from, *m);
  }
  if (topology_.In(m->round()).At(self, from) <= 0) return;   // not an in-neighbour this round
  if (inbox_.Has(m->round(), Channel::kModel, from)) return;  // duplicate
  const std::uint64_t round = m->round();
  // A whole model for a round beyond any a neighbour can legitimately be at
  // replaces the sender's earlier such ones: one far-future model per sender
  // is held (it is the one a catch-up to that round would mix).
  const std::uint64_t near = round_ + lead_ + 1;
  if (!choco_ && round > near) inbox_.DropFromAbove(from, near);
  inbox_.Add(from, std::move(m));
  if (options_.catch_up) {
    std::uint64_t& latest = latest_[from];
    latest = std::max(latest, round);
  }
  if (options_.catch_up && round > ahead_) {
    const std::uint64_t corroborated = Corroborated();
    if (corroborated > ahead_) {
      ahead_ = corroborated;
      if (FellBehind()) return Combine();
    }
  }
  MaybeCombine();
}

std::uint64_t DecentralizedSgdNode::Corroborated() const {
  const NodeId self = env_.self();
  std::vector<std::uint64_t> claims;
  for (const auto& e : topology_.In(round_).Row(self)) {
    if (e.col == self) continue;
    auto seen = latest_.find(e.col);
    claims.push_back(seen == latest_.end() ? 0 : seen->second);
  }
  if (claims.empty()) return 0;
  // The round that a strict majority of the in-neighbours have reached.
  const std::size_t m = claims.size() / 2 + 1;
  std::nth_element(claims.begin(), claims.begin() + static_cast<std::ptrdiff_t>(m - 1), claims.end(),
                   std::greater<>());
  return claims[m - 1];
}

bool DecentralizedSgdNode::Waited(NodeId j) const {
  bool alive = !options_.peer_alive || options_.peer_alive(j);
  bool gone = false;
  if (options_.catch_up) {
    if (auto seen = latest_.find(j); seen != latest_.end()) {
      // A neighbour already past this round without its message here sent
      // it before this node was listening (a restart); it will not come.
      gone = seen->second > round_;
      // One whose message of the last round came is running, whatever the
      // membership view says (a restarted daemon it has not taken back
      // yet). Waiting for it costs one round_timeout if it is in fact gone.
      alive = alive || seen->second + 1 >= round_;
    }
    // With CHOCO, a resync past this round holds that message already.
    auto below = resynced_below_.find(j);
    gone = gone || (below != resynced_below_.end() && below->second > round_);
    // Silent through kSilentRounds timeouts in a row: not waited for until
    // a model of it is mixed again.
    auto silent = silent_.find(j);
    gone = gone || (silent != silent_.end() && silent->second >= kSilentRounds);
  }
  return alive && !gone && !refused_.contains({round_, j});
}

void DecentralizedSgdNode::CountSilent() {
  const NodeId self = env_.self();
  for (const auto& e : topology_.In(round_).Row(self)) {
    if (e.col == self || inbox_.Has(round_, Channel::kModel, e.col) || !Waited(e.col)) continue;
    if (++silent_[e.col] == kSilentRounds) {
      MURMUR_LOG(kWarning)
          << "node " << self << ": neighbour " << e.col << " sent nothing for " << kSilentRounds
          << " rounds in a row while counted alive; its rounds no longer wait for it until a "
             "model of it is mixed again (docs/security.md, Insiders)";
    }
  }
}

std::vector<NodeId> DecentralizedSgdNode::WaitingFor() const {
  std::vector<NodeId> out;
  if (finished() || mixing_ || !sent_ || !trained_) return out;
  for (const auto& e : topology_.In(round_).Row(env_.self()))
    if (e.col != env_.self() && !inbox_.Has(round_, Channel::kModel, e.col) && Waited(e.col))
      out.push_back(e.col);
  return out;
}

void DecentralizedSgdNode::MaybeCombine() {
  if (finished() || mixing_ || !sent_ || !trained_) return;
  const NodeId self = env_.self();
  std::size_t expected = 0;  // every live in-neighbour but self
  for (const auto& e : topology_.In(round_).Row(self)) {
    if (e.col == self) continue;
    if (inbox_.Has(round_, Channel::kModel, e.col) || Waited(e.col)) ++expected;
  }
  if (inbox_.Count(round_, Channel::kModel) >= expected) Combine();
}

void DecentralizedSgdNode::Combine() {
  if (timeout_ != 0) {
    env_.CancelTimer(timeout_);
    timeout_ = 0;
  }
  mixing_ = true;
  const NodeId self = env_.self();
  const auto& w = topology_.In(round_);
  auto got = std::make_shared<std::vector<Received>>(inbox_.Close(round_));
  refused_.erase(refused_.begin(), refused_.lower_bound({round_ + 1, 0}));
  // Mix in sender order, so the float sum does not depend on arrival order.
  std::sort(got->begin(), got->end(), [](const Received& a, const Received& b) { return a.from < b.from; });
  for (const Received& r : *got) silent_.erase(r.from);  // it answered this round
  std::vector<float> weights;
  weights.reserve(got->size());
  for (const Received& r : *got) weights.push_back(static_cast<float>(w.At(self, r.from)));
  double mix_flops = 2.0 * static_cast<double>(x_->size()) * static_cast<double>(got->size() + 2);
  // Robust rules read every model once more: distances, or the per-coordinate sort.
  if (options_.mixing.rule != MixingRule::kMean) {
    mix_flops += 3.0 * static_cast<double>(x_->size()) * static_cast<double>(got->size() + 1);
  }
  // The vector work runs as offloaded work: in the simulator, mixing of all
  // nodes that finish a round at the same instant proceeds in parallel.
  env_.Offload(
      mix_flops, [this, got, weights = std::move(weights)] { Mix(*got, weights); },
      [this] {
        mixing_ = false;
        for (const auto& [from, why] : judged_out_) env_.Refuse(from, why);
        judged_out_.clear();
        const std::uint64_t done = round_++;
        if (options_.catch_up && ahead_ >= round_ + lead_ && ahead_ < options_.rounds) {
          MURMUR_LOG(kInfo) << "node " << env_.self() << ": catching up from round " << round_ << " to "
                            << ahead_;
          round_ = ahead_;
          // The skipped rounds' messages: stale whole models, or CHOCO
          // differences that still belong in s (their senders' x^ moved).
          for (const Received& r : inbox_.CloseThrough(round_ - 1)) {
            if (choco_) OnLate(r.from, *r.msg);
          }
        }
        sent_ = trained_ = false;  // of the new round: nothing yet
        RunDeferred();
        if (observer_ != nullptr) observer_->OnRoundDone(env_.self(), done, loss_);
        BeginRound();
      });
}

void DecentralizedSgdNode::Mix(const std::vector<Received>& got, const std::vector<float>& weights) {
  const float gamma = static_cast<float>(options_.gamma);
  options_.local.Save(*x_);  // ATC: the trained values; CTA: the round's start (none kept: no-op)
  if (choco_) {
    for (std::size_t k = 0; k < got.size(); ++k) Absorb(got[k].from, got[k].msg->update(), weights[k]);
    // x += gamma (s - x^)
    x_->vec() += gamma * (s_.vec() - x_hat_.vec());
  } else {
    MixFull(got, weights);
  }
  // x_ is this node's alone here (MixFull swapped in its own buffer). The
  // outer step (DiLoCo, adapt-then-combine only), then the node's own tensors.
  outer_.Apply(*x_);
  options_.local.Restore(*x_);
  if (options_.order == MixOrder::kCombineThenAdapt) x_->vec() += delta_.vec();
}

void DecentralizedSgdNode::MixFull(const std::vector<Received>& got, std::vector<float> weights) {
  const float gamma = static_cast<float>(options_.gamma);
  const MixingOptions& rule = options_.mixing;
  const bool judge = admission_.plausibility() > 0;
  // x may be shared with this round's messages, so the result goes to acc,
  // which then becomes x.
  Exclusive(acc_);
  const ParamVector& x = *x_;
  ParamVector& acc = *acc_;
  std::vector<const float*> dense;
  std::vector<std::size_t> index;  // of each entry of dense (and weights) in got
  for (std::size_t k = 0; k < got.size(); ++k) {
    dense.push_back(got[k].msg->update().dense_f32());
    index.push_back(k);
  }
  bool all_dense = std::find(dense.begin(), dense.end(), nullptr) == dense.end();
  // Judged and mixed: int8 models are mixed from their codes, as Update::AddTo adds them.
  std::vector<const compression::PackedValues*> codes(got.size(), nullptr);
  if ((judge || rule.rule != MixingRule::kMean) && !all_dense) {
    // Judging and the robust rules look at every coordinate of every model:
    // decode the value codings once, into the buffers of an earlier round
    // (no fresh pages to fault in).
    decoded_.resize(got.size());
    for (std::size_t k = 0; k < got.size(); ++k) {
      if (dense[k] != nullptr) continue;
      const compression::Update& u = got[k].msg->update();
      Status st;
      if (rule.rule == MixingRule::kMean && u.values().coding.type == compression::ValueType::kInt8) {
        codes[k] = &u.values();
        continue;
      } else if (rule.rule == MixingRule::kMean) {
        // fp16, bf16: decoded exactly, so W_ij v is what AddTo adds.
        decoded_[k].resize(x.size());
        u.values().DecodeTo(decoded_[k]);
      } else {
        decoded_[k].assign(x.size(), 0.0f);  // the robust rules' values: 0 + v, as they always were
        st = u.AddTo(decoded_[k]);
      }
      MURMUR_CHECK_MSG(st.ok(), st.ToString());
      dense[k] = decoded_[k].data();
    }
    all_dense = true;
  }
  // Leaves out the models judged out: their weight stays on this node's own
  // model, as a neighbour's that missed the round. Returns whether any was.
  auto drop_judged_out = [&](const std::vector<std::optional<Refusal>>& verdicts) {
    std::size_t kept = 0;
    for (std::size_t k = 0; k < dense.size(); ++k) {
      if (verdicts[k]) {
        judged_out_.emplace_back(got[index[k]].from, *verdicts[k]);
        continue;
      }
      dense[kept] = dense[k];
      codes[kept] = codes[k];
      weights[kept] = weights[k];
      index[kept] = index[k];
      ++kept;
    }
    const bool dropped = kept < dense.size();
    dense.resize(kept);
    codes.resize(kept);
    weights.resize(kept);
    index.resize(kept);
    return dropped;
  };
  auto own_weight = [&] {
    // 1 - the sum of received weights: a neighbour that missed the round
    // leaves its weight on the node itself.
    float own = 1.0f;
    for (float wij : weights) own -= wij;
    return own;
  };
  std::vector<std::optional<Refusal>> verdicts(got.size());
  if (rule.rule == MixingRule::kMean && judge) {
    // Mixed and judged in one pass; mixed again without what it refused (rare).
    std::vector<double> d2;
    double own2 = 0;
    MixDense(own_weight(), x, dense, weights, acc, &d2, &own2, &codes);
    for (std::size_t k = 0; k < got.size(); ++k) verdicts[k] = admission_.Verdict(d2[k], own2);
    if (drop_judged_out(verdicts)) MixDense(own_weight(), x, dense, weights, acc, nullptr, nullptr, &codes);
  } else {
    if (judge) {
      for (std::size_t k = 0; k < got.size(); ++k)
        verdicts[k] = admission_.Judge({dense[k], x.size()}, x.span());
      drop_judged_out(verdicts);
    }
    if (rule.rule == MixingRule::kMedian || rule.rule == MixingRule::kTrimmedMean) {
      MixNeighbourhood(rule, x.span(), dense, acc.span());
    } else {
      if (rule.rule == MixingRule::kClipped) {
        // ClippedGossip as reweighting (gossip/robust_mixing.h): W_ij -> W_ij min(1, tau_i / d_j).
        std::vector<double> distances(dense.size());
        for (std::size_t k = 0; k < dense.size(); ++k) {
          distances[k] = std::sqrt(robust::SquaredDistance({dense[k], x.size()}, x.span()));
        }
        ClipWeights(distances, ClipRadius(rule, distances, weights), weights);
      }
      const float own = own_weight();
      if (all_dense) {
        MixDense(own, x, dense, weights, acc);
      } else {
        acc.vec() = own * x.vec();
        for (std::size_t k = 0; k < index.size(); ++k) {
          Status st = got[index[k]].msg->update().AddTo(acc.span(), weights[k]);
          MURMUR_CHECK_MSG(st.ok(), st.ToString());
        }
      }
    }
  }
  if (gamma != 1.0f) acc.vec() = x.vec() + gamma * (acc.vec() - x.vec());
  std::swap(x_, acc_);  // x <- acc without a pass over memory
}

std::size_t DecentralizedSgdNode::state_floats() const {
  std::size_t vectors = choco_ ? 3 + !codec_->error_feedback() : 2;
  if (options_.order == MixOrder::kCombineThenAdapt) ++vectors;
  vectors += outer_.state_vectors();
  return vectors * x_->size();
}

}  // namespace murmur::gossip
