#include "gossip/decentralized_sgd.h"

#include <algorithm>

#include "core/check.h"
#include "core/log.h"

namespace murmur::gossip {

namespace {
double SelfWeight(const topology::MixingMatrix& w, NodeId i) { return w.At(i, i); }
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
  if (options_.catch_up && m->channel() == Channel::kModel) MaybeWaitAgain(from, m->round());
  if (m->round() < inbox_.closed_below()) {
    if (!choco_) return;                            // a full model of a past round is stale
    if (mixing_) return Defer(from, std::move(m));  // s is being read
    return OnLate(from, *m);
  }
  if (topology_.In(m->round()).At(self, from) <= 0) return;  // not an in-neighbour this round
  const std::uint64_t round = m->round();
  // A whole model for a round beyond any a neighbour can legitimately be at
  // replaces the sender's earlier such ones, of that round too: one
  // far-future model per sender is held, the newest (it is the one a catch-up
  // to that round would mix). Nearer rounds keep the first copy.
  const std::uint64_t near = round_ + lead_ + 1;
  if (!choco_ && round > near)
    inbox_.DropFromAbove(from, near);
  else if (inbox_.Has(round, Channel::kModel, from))
    return;  // duplicate
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
  return topology_.MajorityRound(round_, env_.self(), latest_);
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
    // Silent through SilentNeighbours::kRounds timeouts in a row: not waited for until
    // a model of it is mixed again.
    gone = gone || silent_.Silent(j);
  }
  return alive && !gone && !refused_.contains({round_, j});
}

void DecentralizedSgdNode::MaybeWaitAgain(NodeId j, std::uint64_t round) {
  // Waiting for nobody, the node would run on alone, ever further ahead of a
  // neighbour that lags only because its other neighbours held it up (a
  // partition's first seconds, before membership declares the far side
  // dead): then it waits for the neighbour again. With another neighbour to
  // mix with, a neighbour whose models keep coming after its rounds end
  // stays unwaited, so it costs SilentNeighbours::kRounds timeouts, not one a round.
  if (!silent_.WaitAgain(env_.self(), j, round, topology_.In(round_).Row(env_.self()),
                         [this](NodeId e) { return Waited(e); }))
    return;
  MURMUR_LOG(kInfo) << "node " << env_.self() << ": neighbour " << j << " sent a model of round " << round
                    << "; it lags rather than withholds, and with no other neighbour to wait for it is "
                       "waited for again";
}

void DecentralizedSgdNode::CountSilent() {
  const NodeId self = env_.self();
  for (const auto& e : topology_.In(round_).Row(self)) {
    if (e.col == self || inbox_.Has(round_, Channel::kModel, e.col) || !Waited(e.col)) continue;
    if (silent_.Missed(e.col, round_)) {
      MURMUR_LOG(kWarning)
          << "node " << self << ": neighbour " << e.col << " sent nothing for " << SilentNeighbours::kRounds
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
  for (const Received& r : *got) silent_.Answered(r.from);
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

std::size_t DecentralizedSgdNode::state_floats() const {
  std::size_t vectors = choco_ ? 3 + !codec_->error_feedback() : 2;
  if (options_.order == MixOrder::kCombineThenAdapt) ++vectors;
  vectors += outer_.state_vectors();
  return vectors * x_->size();
}

}  // namespace murmur::gossip
