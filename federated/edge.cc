#include "federated/edge.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "core/check.h"

namespace murmur::federated {

EdgeAggregator::EdgeAggregator(Env& env, const Layout& layout, EdgeOptions options)
    : env_(env),
      options_(std::move(options)),
      selector_(static_cast<NodeId>(options_.members.size()), options_.selection,
                env.MakeRng(RngPurpose::kSelection)),
      attack_rng_(env.MakeRng(RngPurpose::kAttack)),
      x_(layout),
      scratch_(layout),
      pending_(options_.members.size(), 0),
      straggling_until_(options_.members.size(), 0),
      busy_(options_.members.size(), 0),
      acc_(x_.size(), 0.0),
      delta_(x_.size(), 0.0),
      diff_(x_.size(), 0.0) {
  MURMUR_CHECK(!options_.members.empty());
  MURMUR_CHECK(options_.attacker.empty() || options_.attacker.size() == options_.members.size());
  for (std::size_t i = 0; i < options_.members.size(); ++i) member_index_.emplace(options_.members[i], i);
  if (options_.robust.rule == AggregationRule::kCenteredClipping) last_.assign(x_.size(), 0.0);
}

bool EdgeAggregator::Buffered() const {
  return options_.robust.rule != AggregationRule::kMean || PoisonsUpdates(options_.attack);
}

std::size_t EdgeAggregator::state_floats() const {
  std::size_t n =
      x_.size() + scratch_.size() + 2 * (acc_.size() + delta_.size() + last_.size() + diff_.size());
  for (const auto& h : held_) n += h.size();
  return n;
}

void EdgeAggregator::SetOnline(NodeId client, bool online) {
  auto it = member_index_.find(client);
  if (it == member_index_.end()) return;
  const std::size_t i = it->second;
  selector_.SetOnline(static_cast<NodeId>(i), online);
  if (!online) straggling_until_[i] = 0;
  if (online || !pending_[i]) return;
  pending_[i] = 0;
  --outstanding_;
  MaybeClose();
}

void EdgeAggregator::SetCluster(std::vector<std::uint8_t> in_cluster, std::size_t k) {
  MURMUR_CHECK(in_cluster.size() == options_.members.size());
  excluded_ = std::move(in_cluster);
  for (auto& e : excluded_) e = e == 0 ? 1 : 0;
  options_.clients_per_round = k;
}

void EdgeAggregator::OnMessage(NodeId from, MessagePtr msg) {
  if (msg->kind() != kFedMessageKind) return;
  const auto& m = static_cast<const FedMessage&>(*msg);
  if (from == options_.parent) {
    if (m.header().kind == FedKind::kTask && m.updates()[0]->size() == x_.size()) OnTask(m);
    return;
  }
  auto it = member_index_.find(from);
  const FedHeader& h = m.header();
  if (it != member_index_.end() && h.kind == FedKind::kResult) straggling_until_[it->second] = 0;
  if (it == member_index_.end() || !open_ || h.kind != FedKind::kResult || !pending_[it->second] ||
      h.round != task_.round || m.updates()[0]->size() != x_.size()) {
    ++dropped_;
    return;
  }
  pending_[it->second] = 0;
  --outstanding_;
  OnResult(it->second, m);
}

void EdgeAggregator::OnTask(const FedMessage& m) {
  // A task while a round is open: the parent moved on; the old round is abandoned.
  if (deadline_timer_ != 0) env_.CancelTimer(deadline_timer_);
  deadline_timer_ = 0;
  task_ = m.header();
  started_ = env_.Now();
  x_.SetZero();
  Status st = m.updates()[0]->AddTo(x_.span());
  if (!st.ok()) return;
  open_ = true;
  results_ = outstanding_ = 0;
  weight_sum_ = tau_sum_ = loss_sum_ = 0;
  std::fill(acc_.begin(), acc_.end(), 0.0);
  held_.clear();
  held_weight_.clear();
  held_tau_.clear();
  held_loss_.clear();
  held_member_.clear();
  held_attacker_.clear();
  std::fill(pending_.begin(), pending_.end(), 0);

  FedHeader h = task_;
  h.budget_ns = 0;
  if (options_.partial_work && options_.deadline.count() > 0) {
    h.budget_ns =
        static_cast<std::int64_t>(options_.work_fraction * static_cast<double>(options_.deadline.count()));
  }
  auto forward = std::make_shared<const FedMessage>(h, m.updates());  // the updates are shared
  const auto want = static_cast<std::size_t>(
      std::ceil(options_.over_commit * static_cast<double>(options_.clients_per_round) - 1e-9));
  for (std::size_t i = 0; i < busy_.size(); ++i) {
    busy_[i] = straggling_until_[i] > rounds_done_;
  }
  for (NodeId i : selector_.SelectAvoiding(want, busy_, excluded_)) {
    env_.Send(options_.members[i], forward);
    if (!selector_.online(i)) continue;  // a task to an offline client is lost
    pending_[i] = 1;
    ++outstanding_;
  }
  if (options_.deadline.count() > 0) {
    const std::uint64_t r = task_.round;
    deadline_timer_ = env_.StartTimer(options_.deadline, [this, r] {
      deadline_timer_ = 0;
      if (open_ && task_.round == r) CloseRound();
    });
  }
  MaybeClose();
}

void EdgeAggregator::OnResult(std::size_t member, const FedMessage& m) {
  const FedHeader& h = m.header();
  const ResultBounds bounds{options_.max_weight, options_.plausibility, options_.length_floor};
  auto refused = CheckResult(m, bounds);
  if (!refused) {
    scratch_.SetZero();
    Status st = m.updates()[0]->AddTo(scratch_.span());
    MURMUR_CHECK_MSG(st.ok(), st.ToString());
    // Differences of models in double, as the flat server takes them.
    const bool is_model = (h.flags & kFlagIsModel) != 0;
    for (std::size_t j = 0; j < diff_.size(); ++j)
      diff_[j] = is_model ? static_cast<double>(scratch_[j]) - static_cast<double>(x_[j]) : scratch_[j];
    refused = JudgeDifference(diff_, x_.span(), bounds);
  }
  if (refused) {  // the member's answer, an empty one (docs/security.md, Insiders)
    ++dropped_;
    env_.Refuse(options_.members[member], *refused);
    return MaybeClose();
  }
  ++accepted_;
  selector_.Report(static_cast<NodeId>(member), h.weight, h.loss,
                   std::chrono::duration<double>(env_.Now() - started_).count());
  const double weight = h.weight;
  const double steps = std::max<double>(h.steps, 1);
  const double scale = options_.fednova ? 1.0 / steps : 1.0;
  auto delta = [&](std::size_t j) { return diff_[j] * scale; };
  if (Buffered()) {
    ParamVector d(x_.layout());
    for (std::size_t j = 0; j < d.size(); ++j) d[j] = static_cast<float>(delta(j));
    held_.push_back(std::move(d));
    held_weight_.push_back(weight);
    held_tau_.push_back(steps);
    held_loss_.push_back(h.loss);
    held_member_.push_back(member);
    held_attacker_.push_back(!options_.attacker.empty() && options_.attacker[member]);
  } else {
    for (std::size_t j = 0; j < acc_.size(); ++j) acc_[j] += weight * delta(j);
  }
  weight_sum_ += weight;
  tau_sum_ += weight * steps;
  loss_sum_ += h.loss;
  ++results_;
  MaybeClose();
}

void EdgeAggregator::MaybeClose() {
  if (open_ && (results_ >= options_.clients_per_round || outstanding_ == 0)) CloseRound();
}

void EdgeAggregator::CloseRound() {
  open_ = false;
  if (deadline_timer_ != 0) env_.CancelTimer(deadline_timer_);
  deadline_timer_ = 0;
  for (std::size_t i = 0; i < pending_.size(); ++i) {  // late results are dropped
    if (pending_[i]) straggling_until_[i] = rounds_done_ + 1 + kStragglerRounds;
  }
  std::fill(pending_.begin(), pending_.end(), 0);
  outstanding_ = 0;
  ++rounds_done_;
  if (results_ > 0 && Buffered()) PoisonHeld();
  const std::size_t n = results_;
  if (n > 0) {
    if (Buffered()) {
      std::vector<std::span<const float>> view;
      for (auto& h : held_) view.push_back(h.span());
      Status st = Aggregate(options_.robust, view, held_weight_, last_, delta_);
      if (!st.ok()) {  // too few results for the rule (e.g. Krum): the median, as the flat server does
        RobustOptions median;
        median.rule = AggregationRule::kMedian;
        st = Aggregate(median, view, {}, {}, delta_);
        MURMUR_CHECK_MSG(st.ok(), st.ToString());
      }
      if (!last_.empty()) last_ = delta_;
    } else {
      for (std::size_t j = 0; j < acc_.size(); ++j) delta_[j] = acc_[j] / weight_sum_;
    }
  }
  SendUp(n);
}

void EdgeAggregator::PoisonHeld() {
  const auto refused =
      PoisonAndJudge(options_.attack, options_.attack_scale, attack_rng_, held_, held_attacker_, held_tau_,
                     options_.fednova, x_.span(), {0, options_.plausibility, options_.length_floor}, diff_);
  if (refused.empty()) return;
  // As if they had been refused on arrival: out of the round, and the
  // round's sums taken again in arrival order without them.
  for (const std::size_t i : refused) env_.Refuse(options_.members[held_member_[i]], Refusal::kImplausible);
  dropped_ += refused.size();
  accepted_ -= refused.size();
  results_ -= refused.size();
  EraseIndices(refused, held_, held_weight_, held_tau_, held_loss_, held_member_, held_attacker_);
  const HeldSums sums = SumHeld(held_weight_, held_tau_, held_loss_);
  weight_sum_ = sums.weight;
  tau_sum_ = sums.tau;
  loss_sum_ = sums.loss;
}

void EdgeAggregator::SendUp(std::size_t results) {
  FedHeader r;
  r.kind = FedKind::kResult;
  r.round = task_.round;
  if (results == 0) {
    r.flags = kFlagEmpty;
    std::vector<UpdatePtr> none{compression::DenseF32Update({})};
    env_.Send(options_.parent, std::make_shared<const FedMessage>(r, std::move(none)));
    return;
  }
  r.weight = weight_sum_;
  r.loss = loss_sum_ / static_cast<double>(results);
  const double tau = std::max(1.0, std::round(tau_sum_ / weight_sum_));
  r.steps = static_cast<std::uint32_t>(tau);
  const double scale = options_.fednova ? tau : 1.0;
  std::vector<float> out(delta_.size());
  const bool model = (task_.flags & kFlagWantModel) != 0;
  if (model) r.flags = kFlagIsModel;
  for (std::size_t j = 0; j < out.size(); ++j) {
    const double d = scale * delta_[j];
    out[j] = static_cast<float>(model ? static_cast<double>(x_[j]) + d : d);
  }
  std::vector<UpdatePtr> updates{compression::DenseF32Update(out)};
  env_.Send(options_.parent, std::make_shared<const FedMessage>(r, std::move(updates)));
}

}  // namespace murmur::federated
