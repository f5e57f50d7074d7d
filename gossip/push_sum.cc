#include "gossip/push_sum.h"

#include <algorithm>
#include <cstdlib>
#include <string>

#include "core/check.h"
#include "core/log.h"

namespace murmur::gossip {

PushSumNode::PushSumNode(Env& env, RoundTopology& topology, LocalLearner& learner, ParamVector x0,
                         std::unique_ptr<Codec> codec, PushSumOptions options, RoundObserver* observer)
    : env_(env),
      topology_(topology),
      learner_(learner),
      codec_(std::move(codec)),
      options_(options),
      admission_(codec_->codec_spec(), options_.plausibility),
      observer_(observer),
      x_(std::move(x0)) {
  MURMUR_CHECK_MSG(codec_->full_model_safe(),
                   "push-sum sends running sums whole: use none, fp16, bf16 or int8");
  z_ = x_.Clone();
  next_x_ = ParamVector(x_.layout());
  out_degree0_ = topology_.Out(0).Row(env_.self()).size();
  round_ = ahead_ = options_.first_round;
  if (options_.catch_up) lead_ = topology_.InNeighbourLead(env_.self());
  if (round_ > 0) inbox_.Close(round_ - 1);  // earlier rounds are over
}

void PushSumNode::Start() { BeginRound(); }

Result<NodeState> PushSumNode::ExportState() const {
  NodeState s;
  MURMUR_RETURN_IF_ERROR(codec_->ExportState(s));
  s.Put("x", x_);
  s.scalars["w"] = w_;
  for (const auto& [j, sum] : sent_) {
    s.Put("sent/" + std::to_string(j), sum.x);
    s.scalars["sent_w/" + std::to_string(j)] = sum.w;
  }
  for (const auto& [j, sum] : received_) {
    s.Put("received/" + std::to_string(j), sum.x);
    s.scalars["received_w/" + std::to_string(j)] = sum.w;
  }
  return s;
}

Status PushSumNode::ImportState(const NodeState& state) {
  MURMUR_RETURN_IF_ERROR(state.Get("x", x_));
  MURMUR_RETURN_IF_ERROR(codec_->ImportState(state));
  MURMUR_ASSIGN_OR_RETURN(w_, state.Scalar("w"));
  if (!(w_ > 0)) return Status::InvalidArgument("push-sum state: weight w must be positive");
  sent_.clear();
  received_.clear();
  for (const auto& [name, v] : state.vectors) {
    const bool is_sent = name.rfind("sent/", 0) == 0;
    if (!is_sent && name.rfind("received/", 0) != 0) continue;
    const std::string id = name.substr(name.find('/') + 1);
    char* end = nullptr;
    const unsigned long j = std::strtoul(id.c_str(), &end, 10);
    if (id.empty() || *end != '\0' || j >= topology_.size())
      return Status::InvalidArgument("push-sum state: '" + name + "' names no node of the topology");
    RunningSum sum;
    sum.x = ParamVector(x_.layout());
    MURMUR_RETURN_IF_ERROR(state.Get(name, sum.x));
    MURMUR_ASSIGN_OR_RETURN(sum.w, state.Scalar(std::string(is_sent ? "sent_w/" : "received_w/") + id));
    (is_sent ? sent_ : received_)[static_cast<NodeId>(j)] = std::move(sum);
  }
  z_.vec() = x_.vec() * static_cast<float>(1.0 / w_);
  z_norm2_ = -1;
  return Status::Ok();
}

// Whether no new mass has come since this node's previous push although it
// had in-neighbours in the previous round (see the header: it trains alone).
bool PushSumNode::Alone() {
  if (!pushed_before_ || round_ == 0 || got_mass_) return false;
  const NodeId self = env_.self();
  for (const auto& e : topology_.In(round_ - 1).Row(self)) {
    if (e.col != self) return true;
  }
  return false;
}

void PushSumNode::BeginRound() {
  if (finished()) return;
  pushed_ = false;
  training_ = true;
  const bool alone = Alone();
  env_.Offload(
      options_.local_steps * learner_.FlopsPerStep() +
          codec_->FlopsPerElement() * static_cast<double>(x_.size()),
      [this, alone] {
        // SGP: x <- x - eta g(z), the steps taken on z = x / w. Alone:
        // x <- x - eta w g(z), so that z moves by the steps themselves.
        const float inv_w = static_cast<float>(1.0 / w_);
        z_.vec() = x_.vec() * inv_w;
        z_norm2_ = -1;
        next_x_.CopyFrom(z_);
        loss_ = learner_.Train(next_x_, options_.local_steps);
        if (alone) {
          x_.vec() += static_cast<float>(w_) * (next_x_.vec() - z_.vec());
        } else {
          x_.vec() += next_x_.vec() - z_.vec();
        }
      },
      [this] {
        training_ = false;
        std::vector<Received> parked;
        parked.swap(parked_);
        for (Received& r : parked) Receive(r.from, std::move(r.msg));
        Push();
        MaybeCombine();
      });
}

// Whether in-neighbour j of the previous round showed that it is reachable:
// its message of that round (or a later one) came, or any message of it came
// since this node's previous push (a neighbour whose messages queue behind a
// slow uplink is late, not gone).
bool PushSumNode::Heard(NodeId j) const {
  auto it = heard_.find(j);
  return it != heard_.end() && (it->second.since_push || it->second.round + 1 >= round_);
}

// The out-neighbours of this round that get no new mass (see the header):
// in-neighbours of the previous round not heard from, or all of them when
// this node heard from none of its in-neighbours. A node that has not pushed
// yet (a fresh start, or a resume from a checkpoint) has no evidence.
std::vector<NodeId> PushSumNode::SilentOutNeighbours() {
  std::vector<NodeId> silent;
  if (!pushed_before_ || round_ == 0) return silent;
  const NodeId self = env_.self();
  const topology::MixingMatrix& before = topology_.In(round_ - 1);
  bool any_in = false, any_heard = false;
  for (const auto& e : before.Row(self)) {
    if (e.col == self) continue;
    any_in = true;
    any_heard = any_heard || Heard(e.col);
  }
  const bool cut_off = any_in && !any_heard;
  for (const auto& e : topology_.Out(round_).Row(self)) {
    if (e.col == self) continue;
    if (cut_off || (before.At(self, e.col) > 0 && !Heard(e.col))) silent.push_back(e.col);
  }
  return silent;
}

void PushSumNode::Push() {
  const NodeId self = env_.self();
  const std::vector<NodeId> silent = SilentOutNeighbours();
  auto is_silent = [&](NodeId j) { return std::find(silent.begin(), silent.end(), j) != silent.end(); };
  const auto& out = topology_.Out(round_);
  // The shares this node keeps: P_ii, and P_ji of every silent j.
  double keep = 0;
  for (const auto& e : out.Row(self)) {
    if (e.col == self || is_silent(e.col)) keep += e.weight;
  }
  next_x_.vec() = static_cast<float>(keep) * x_.vec();
  next_w_ = keep * w_;
  for (const auto& e : out.Row(self)) {
    if (e.col == self) continue;
    auto [it, fresh] = sent_.try_emplace(e.col);
    if (fresh) it->second.x = ParamVector(x_.layout());
    if (!is_silent(e.col)) {
      it->second.x.vec() += static_cast<float>(e.weight) * x_.vec();
      it->second.w += e.weight * w_;
    }
    auto msg = std::make_shared<const GossipMessage>(Channel::kPushSum, round_, it->second.w,
                                                     codec_->Compress(it->second.x.span(), round_));
    env_.Send(e.col, std::move(msg));
  }
  pushed_ = pushed_before_ = true;
  got_mass_ = false;
  for (auto& [j, h] : heard_) h.since_push = false;
  const std::uint64_t r = round_;
  timeout_ = env_.StartTimer(options_.round_timeout, [this, r] {
    timeout_ = 0;
    if (round_ == r && pushed_) Combine();
  });
}

// Adds sigma - rho (what `from` pushed that this node has not seen) to (x, w).
void PushSumNode::Absorb(NodeId from, const GossipMessage& m, ParamVector& x, double& w, double judged_w) {
  auto [it, fresh] = received_.try_emplace(from);
  RunningSum& rho = it->second;
  if (fresh) rho.x = ParamVector(x_.layout());
  // An older running sum overtaken by a newer one, or the same again (a
  // sender that pushed nothing new to this node): nothing new in it.
  if (m.scalar() <= rho.w) return;
  // Judged again when rho has moved since it arrived (two sums, each
  // plausible against an older one, may differ by an implausible step).
  if (rho.w != judged_w) {
    if (auto why = Implausible(m, &rho.x, m.scalar() - rho.w)) {
      env_.Refuse(from, *why);  // rho stays: an honest later sum still carries what came before
      return;
    }
  }
  x.vec() -= rho.x.vec();
  Status st = m.update().AddTo(x.span());
  MURMUR_CHECK_MSG(st.ok(), st.ToString());
  rho.x.SetZero();
  st = m.update().AddTo(rho.x.span());
  MURMUR_CHECK_MSG(st.ok(), st.ToString());
  w += m.scalar() - rho.w;
  rho.w = m.scalar();
  got_mass_ = true;
}

void PushSumNode::OnMessage(NodeId from, MessagePtr msg) {
  if (msg->kind() != kGossipMessageKind) return;
  auto m = std::static_pointer_cast<const GossipMessage>(msg);
  if (m->channel() != Channel::kPushSum) return;
  // The local steps rewrite z, against which sums are judged: what comes
  // meanwhile waits for them (the Env contract of Offload).
  if (training_) {
    parked_.push_back(Received{from, std::move(m), -1});
    return;
  }
  Receive(from, std::move(m));
}

void PushSumNode::Receive(NodeId from, std::shared_ptr<const GossipMessage> m) {
  // Judged as it arrives, so that a sender whose every sum is refused is a
  // silent neighbour (no new mass goes to it), not a sink for the mass.
  double judged_w = -1;
  auto why = admission_.Check(m->update(), x_.size(), false, admission_.plausibility() <= 0);
  if (!why) {
    const auto rho = received_.find(from);
    const double rho_w = rho == received_.end() ? 0.0 : rho->second.w;
    if (m->scalar() > rho_w) {
      why = Implausible(*m, rho == received_.end() ? nullptr : &rho->second.x, m->scalar() - rho_w);
      judged_w = rho_w;
    }
  }
  if (why) {
    env_.Refuse(from, *why);
    return;
  }
  auto [heard, fresh] = heard_.try_emplace(from, Hearing{m->round(), true});
  heard->second.round = std::max(heard->second.round, m->round());
  heard->second.since_push = true;
  if (m->round() < inbox_.closed_below()) return AbsorbLate(from, std::move(m), judged_w);
  if (topology_.In(m->round()).At(env_.self(), from) <= 0) return;
  if (inbox_.Has(m->round(), Channel::kPushSum, from)) return;
  // Beyond any round a neighbour can legitimately be at, one round per
  // sender is held, its highest: a running sum carries every earlier one's mass.
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
  inbox_.Add(from, std::move(m), judged_w);
  MaybeCombine();
}

// Late mass is still mass: it joins the node's state now (the round being
// assembled once this node has pushed its shares; x and w before that, after
// the local steps that use them, and after the run's last round).
void PushSumNode::AbsorbLate(NodeId from, std::shared_ptr<const GossipMessage> m, double judged_w) {
  MURMUR_CHECK(!training_);  // OnMessage parks what comes while the local steps run
  if (pushed_) {
    Absorb(from, *m, next_x_, next_w_, judged_w);
  } else {
    Absorb(from, *m, x_, w_, judged_w);
  }
}

std::optional<Refusal> PushSumNode::Implausible(const GossipMessage& m, const ParamVector* rho_x,
                                                double dw) const {
  // The whole network holds one unit of weight per node: no sender can add more.
  if (dw > static_cast<double>(topology_.size())) return Refusal::kImplausible;
  if (admission_.plausibility() <= 0) return std::nullopt;
  // The model the new mass carries, dx / dw (a weighted mean of the
  // sender's z), judged against z_i.
  const std::span<const float> sum = UpdateAdmission::Values(m.update(), scratch_);
  // Most carried models are within the bound whatever their distance:
  // ||dx|| / dw, from one pass over the sums, tells (gossip/admission.h).
  const double dx2 = rho_x == nullptr ? BlockSquaredNorm(sum) : BlockSquaredDistance(sum, rho_x->span());
  if (admission_.SurelyPlausible(dx2 / (dw * dw), ZNorm2())) return std::nullopt;
  const auto inv = static_cast<float>(1.0 / dw);
  float carried[kAdmissionBlock];
  double d2 = 0;
  for (std::size_t b = 0; b < sum.size(); b += kAdmissionBlock) {
    const std::size_t len = std::min(kAdmissionBlock, sum.size() - b);
    if (rho_x == nullptr) {
      for (std::size_t k = 0; k < len; ++k) carried[k] = sum[b + k] * inv;
    } else {
      for (std::size_t k = 0; k < len; ++k) carried[k] = (sum[b + k] - (*rho_x)[b + k]) * inv;
    }
    AddBlockDistances(carried, z_.data() + b, len, d2, nullptr);  // judged in full, block by block, unstored
  }
  return admission_.Verdict(d2, ZNorm2());
}

double PushSumNode::ZNorm2() const {
  if (z_norm2_ < 0) z_norm2_ = BlockSquaredNorm(z_.span());
  return z_norm2_;
}

// catch_up: a neighbour already past this round without its message here
// sent it before this node was listening (a restart); it will not come.
bool PushSumNode::Gone(NodeId j) const {
  if (!options_.catch_up) return false;
  auto it = latest_.find(j);
  return it != latest_.end() && it->second > round_;
}

void PushSumNode::MaybeCombine() {
  if (finished() || !pushed_) return;
  // catch_up: an in-neighbour further ahead than waiting allows will not send this round's share again.
  if (options_.catch_up && ahead_ > round_ + lead_) return Combine();
  const NodeId self = env_.self();
  std::size_t expected = 0;
  for (const auto& e : topology_.In(round_).Row(self)) {
    if (e.col != self && (inbox_.Has(round_, Channel::kPushSum, e.col) || !Gone(e.col))) ++expected;
  }
  if (inbox_.Count(round_, Channel::kPushSum) >= expected) Combine();
}

void PushSumNode::Combine() {
  if (timeout_ != 0) {
    env_.CancelTimer(timeout_);
    timeout_ = 0;
  }
  std::vector<Received> got = inbox_.Close(round_);
  std::sort(got.begin(), got.end(), [](const Received& a, const Received& b) { return a.from < b.from; });
  for (const Received& r : got) Absorb(r.from, *r.msg, next_x_, next_w_, r.judged_w);
  std::swap(x_, next_x_);
  w_ = next_w_;
  pushed_ = false;  // next_x_ is stale now: late mass goes to x_ until the next push
  MURMUR_CHECK_MSG(w_ > 0, "push-sum weight must stay positive");
  z_.vec() = x_.vec() * static_cast<float>(1.0 / w_);
  z_norm2_ = -1;
  const std::uint64_t done = round_++;
  if (options_.catch_up && ahead_ >= round_ + lead_ && ahead_ < options_.rounds) {
    MURMUR_LOG(kInfo) << "node " << env_.self() << ": catching up from round " << round_ << " to " << ahead_;
    // The skipped rounds keep the node's whole mass (P_ii = 1 for them); the
    // shares its neighbours pushed in them are in their running sums, absorbed
    // here from whatever of those rounds arrived and otherwise with the next
    // message. No mass is lost (docs/algorithms.md "Catch-up").
    std::vector<Received> skipped = inbox_.CloseThrough(ahead_ - 1);
    std::stable_sort(skipped.begin(), skipped.end(), [](const Received& a, const Received& b) {
      return a.msg->round() != b.msg->round() ? a.msg->round() < b.msg->round() : a.from < b.from;
    });
    for (const Received& r : skipped) Absorb(r.from, *r.msg, x_, w_, r.judged_w);
    MURMUR_CHECK_MSG(w_ > 0, "push-sum weight must stay positive");
    z_.vec() = x_.vec() * static_cast<float>(1.0 / w_);
    z_norm2_ = -1;
    round_ = ahead_;
  }
  if (observer_ != nullptr) observer_->OnRoundDone(env_.self(), done, loss_);
  BeginRound();
}

std::size_t PushSumNode::state_floats() const { return (3 + 2 * out_degree0_) * x_.size(); }

}  // namespace murmur::gossip
