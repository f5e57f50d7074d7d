#include "federated/server.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>

#include "core/check.h"

namespace murmur::federated {

FedServer::FedServer(Env& env, ParamVector x0, ServerOptions options, RoundObserver* observer)
    : env_(env),
      options_(std::move(options)),
      observer_(observer),
      x_(std::move(x0)),
      optimizer_(options_.optimizer, x_.size()),
      selector_(options_.num_clients, options_.selection, env.MakeRng(RngPurpose::kSelection)),
      clip_(options_.dp_clip, options_.adaptive),
      noise_rng_(env.MakeRng(RngPurpose::kPrivacy)),
      attack_rng_(env.MakeRng(RngPurpose::kAttack)),
      pending_(options_.num_clients, 0),
      straggling_until_(options_.num_clients, 0),
      misses_(options_.num_clients, 0),
      heard_(options_.num_clients, 0),
      silent_until_(options_.num_clients, 0),
      left_out_now_(options_.num_clients, 0),
      busy_(options_.num_clients, 0),
      task_round_(options_.num_clients, 0),
      task_time_(options_.num_clients, Nanos(0)),
      acc_(x_.size(), 0.0),
      delta_(x_.size(), 0.0),
      scratch_(x_.layout()),
      contributed_(options_.num_clients, 0) {
  MURMUR_CHECK(options_.num_clients > 0 && options_.clients_per_round > 0);
  MURMUR_CHECK(options_.attacker.empty() || options_.attacker.size() == options_.num_clients);
  bounds_ = {options_.max_weight, options_.plausibility, 0};
  if (options_.dp_client_side)
    bounds_.length_floor =
        ClientNoiseLength(options_.dp_clip, options_.dp_noise, options_.clients_per_round, x_.size());
  if (options_.concurrency == 0) options_.concurrency = 2 * options_.clients_per_round;
  if (options_.buffer == 0) options_.buffer = options_.clients_per_round;
  if (options_.scaffold) {
    c_ = ParamVector(x_.layout());
    acc_c_.assign(x_.size(), 0.0);
  }
  if (options_.robust.rule == AggregationRule::kCenteredClipping) last_.assign(x_.size(), 0.0);
  selector_.SetAvailable(options_.available);
}

bool FedServer::Buffered() const {
  return options_.robust.rule != AggregationRule::kMean || PoisonsUpdates(options_.attack);
}

std::size_t FedServer::state_floats() const {
  std::size_t n = x_.size() + scratch_.size() +
                  2 * (acc_.size() + delta_.size() + acc_c_.size() + last_.size()) +
                  2 * optimizer_.state_doubles() + c_.size();
  for (const auto& h : held_) n += h.size();
  return n;
}

double FedServer::epsilon() const {
  return options_.dp_noise > 0 ? accountant_.Epsilon(options_.dp_delta) : 0.0;
}

void FedServer::Start() {
  if (options_.async) {
    auto chosen = selector_.Select(options_.concurrency, pending_);
    for (NodeId c : chosen) SendTask(c);
    if (chosen.empty()) Finish("no client available");
    return;
  }
  StartRound();
}

void FedServer::Finish(std::string reason) {
  finished_ = true;
  open_ = false;
  stop_reason_ = std::move(reason);
}

void FedServer::SendTask(NodeId client) {
  FedHeader h;
  h.kind = FedKind::kTask;
  h.round = round_;
  if (options_.request_model && !options_.async && !options_.secure_aggregation) h.flags = kFlagWantModel;
  if (options_.secure_aggregation) h.flags |= kFlagSecureAggregation;
  if (options_.partial_work && options_.deadline.count() > 0 && !options_.async) {
    h.budget_ns =
        static_cast<std::int64_t>(options_.work_fraction * static_cast<double>(options_.deadline.count()));
  }
  std::vector<UpdatePtr> updates;
  if (options_.broadcast) {
    updates.push_back(options_.broadcast->Compress(x_.span(), x_.layout(), broadcast_state_, noise_rng_));
  } else {
    updates.push_back(compression::DenseF32Update(x_.span()));
  }
  if (options_.scaffold) updates.push_back(compression::DenseF32Update(c_.span()));
  pending_[client] = 1;
  ++outstanding_;
  task_round_[client] = round_;
  task_time_[client] = env_.Now();
  env_.Send(client, std::make_shared<const FedMessage>(h, std::move(updates)));
}

void FedServer::StartRound() {
  if (round_ >= options_.rounds) return Finish("all rounds done");
  const auto n = static_cast<double>(options_.num_clients);
  const double q = std::min(1.0, static_cast<double>(options_.clients_per_round) / n);
  if (options_.dp_noise > 0 && options_.epsilon_budget > 0) {
    RdpAccountant next = accountant_;
    next.Compose(q, options_.dp_noise);
    const double after = next.Epsilon(options_.dp_delta);
    if (after > options_.epsilon_budget) {
      char why[160];
      std::snprintf(why, sizeof(why),
                    "privacy budget: round %llu would take epsilon from %.4g to %.4g, past the budget %.4g",
                    static_cast<unsigned long long>(round_ + 1), epsilon(), after, options_.epsilon_budget);
      return Finish(why);
    }
  }
  if (options_.dp_noise > 0) accountant_.Compose(q, options_.dp_noise);
  open_ = true;
  results_ = outstanding_ = unclipped_ = 0;
  weight_sum_ = tau_sum_ = loss_sum_ = 0;
  std::fill(acc_.begin(), acc_.end(), 0.0);
  if (options_.scaffold) std::fill(acc_c_.begin(), acc_c_.end(), 0.0);
  held_.clear();
  held_weight_.clear();
  held_tau_.clear();
  held_loss_.clear();
  held_from_.clear();
  held_attacker_.clear();
  std::fill(pending_.begin(), pending_.end(), 0);
  const auto want = static_cast<std::size_t>(
      std::ceil(options_.over_commit * static_cast<double>(options_.clients_per_round) - 1e-9));
  std::vector<NodeId> reached;
  for (NodeId c = 0; c < options_.num_clients; ++c) {
    busy_[c] = straggling_until_[c] > round_;
    left_out_now_[c] = silent_until_[c] > round_;
  }
  std::fill(heard_.begin(), heard_.end(), 0);
  for (NodeId c : selector_.SelectAvoiding(
           want, busy_, options_.leave_out_silent ? left_out_now_ : std::vector<std::uint8_t>{})) {
    SendTask(c);
    if (!selector_.online(c)) {  // a task to an offline client is lost
      pending_[c] = 0;
      --outstanding_;
    } else {
      reached.push_back(c);
    }
  }
  if (options_.secure_aggregation) return StartSecureRound(std::move(reached));
  if (options_.deadline.count() > 0) {
    const std::uint64_t r = round_;
    deadline_timer_ = env_.StartTimer(options_.deadline, [this, r] {
      if (open_ && round_ == r) CloseRound();
    });
  }
  MaybeClose();
}

void FedServer::SetOnline(NodeId client, bool online) {
  if (client >= options_.num_clients) return;
  selector_.SetOnline(client, online);
  if (!online) straggling_until_[client] = 0;
  if (online || !pending_[client] || finished_) return;
  if (secagg_) secagg_->ClientGone(client);
  pending_[client] = 0;
  --outstanding_;
  if (options_.async) {
    auto next = selector_.Select(1, pending_);
    for (NodeId c : next) SendTask(c);
  } else {
    MaybeClose();
  }
}

void FedServer::MaybeClose() {
  if (options_.secure_aggregation) return;  // the SecAgg session closes the round
  if (open_ && (results_ >= options_.clients_per_round || outstanding_ == 0)) CloseRound();
}

void FedServer::OnMessage(NodeId from, MessagePtr msg) {
  if (msg->kind() == kSecAggMessageKind && secagg_ && from < options_.num_clients) {
    const auto& m = static_cast<const SecAggMessage&>(*msg);
    if (m.round() == round_) Heard(from);  // it takes part in this round's SecAgg+
    return secagg_->OnMessage(from, m);
  }
  if (msg->kind() != kFedMessageKind || from >= options_.num_clients || finished_) return;
  const auto& m = static_cast<const FedMessage&>(*msg);
  const FedHeader& h = m.header();
  if (h.kind == FedKind::kResult) straggling_until_[from] = 0;  // whatever it was doing, it is done
  // An answer to its last task, late, refused or not: it is not silent.
  if (h.kind == FedKind::kResult && h.round == task_round_[from]) Heard(from);
  if (h.kind == FedKind::kResult && (h.flags & kFlagEmpty) != 0 && pending_[from] && open_ &&
      h.round == round_ && h.round == task_round_[from] && !options_.async) {
    // An edge aggregator none of whose clients answered: it has answered, adding nothing.
    pending_[from] = 0;
    --outstanding_;
    return MaybeClose();
  }
  if (h.kind != FedKind::kResult || !pending_[from] || h.round != task_round_[from] ||
      m.updates()[0]->size() != x_.size() || (options_.scaffold && m.updates().size() != 2) ||
      (!options_.async && (!open_ || h.round != round_))) {
    ++dropped_;
    return;
  }
  pending_[from] = 0;
  --outstanding_;
  if (auto why = CheckResult(m, bounds_)) return RefuseResult(from, *why);
  LoadDelta(m);
  if (auto why = JudgeDifference(delta_, x_.span(), bounds_)) return RefuseResult(from, *why);
  if (!contributed_[from]) {
    contributed_[from] = 1;
    ++contributors_;
  }
  selector_.Report(from, h.weight, h.loss,
                   std::chrono::duration<double>(env_.Now() - task_time_[from]).count());
  OnResult(from, m);
}

void FedServer::RefuseResult(NodeId from, Refusal why) {
  // It counts as this client's answer, an empty one, so the round does not
  // wait for it (docs/security.md, Insiders).
  ++dropped_;
  env_.Refuse(from, why);
  if (!options_.async) return MaybeClose();
  for (NodeId c : selector_.Select(1, pending_)) SendTask(c);  // keep `concurrency` clients training
}

void FedServer::LoadDelta(const FedMessage& m) {
  scratch_.SetZero();
  Status st = m.updates()[0]->AddTo(scratch_.span());
  MURMUR_CHECK_MSG(st.ok(), st.ToString());
  // Differences of models are taken in double, so that x + (y - x) == y exactly.
  const bool is_model = (m.header().flags & kFlagIsModel) != 0;
  for (std::size_t j = 0; j < delta_.size(); ++j) {
    delta_[j] = is_model ? static_cast<double>(scratch_[j]) - static_cast<double>(x_[j]) : scratch_[j];
  }
}

void FedServer::OnResult(NodeId from, const FedMessage& m) {
  const FedHeader& h = m.header();
  ++accepted_;
  double weight = h.weight > 0 ? h.weight : 1.0;
  const double steps = std::max<double>(h.steps, 1);
  const bool dp = options_.dp_clip > 0;
  if (dp) {
    weight = 1.0;  // DP-FedAvg bounds each client's influence: uniform weights
    if (!options_.dp_client_side) {
      double n2 = 0;
      for (double v : delta_) n2 += v * v;
      const double norm = std::sqrt(n2), c = clip_.clip();
      if (norm <= c) ++unclipped_;
      if (norm > c) {
        const double s = c / norm * (1 - 1e-9);
        for (double& v : delta_) v *= s;
      }
    }
  }
  if (options_.fednova) {
    for (double& v : delta_) v /= steps;
  }
  std::vector<double> dc;
  if (options_.scaffold) {
    const auto& u = *m.updates()[1];
    scratch_.SetZero();
    Status st = u.AddTo(scratch_.span());
    MURMUR_CHECK_MSG(st.ok(), st.ToString());
    dc.assign(scratch_.span().begin(), scratch_.span().end());
  }
  loss_sum_ += h.loss;
  if (options_.async) {
    const double staleness = static_cast<double>(round_ - task_round_[from]);
    const double w = weight / std::sqrt(1 + staleness);
    for (std::size_t j = 0; j < acc_.size(); ++j) acc_[j] += w * delta_[j];
    weight_sum_ += weight;
    ++results_;
    if (results_ >= options_.buffer) {
      for (std::size_t j = 0; j < acc_.size(); ++j) delta_[j] = acc_[j] / weight_sum_;
      Apply(delta_);
      const double loss = loss_sum_ / static_cast<double>(results_);
      std::fill(acc_.begin(), acc_.end(), 0.0);
      weight_sum_ = loss_sum_ = 0;
      results_ = 0;
      ++round_;
      if (observer_ != nullptr) observer_->OnRoundDone(env_.self(), round_ - 1, loss);
      if (round_ >= options_.rounds) return Finish("all rounds done");
    }
    for (NodeId c : selector_.Select(1, pending_)) SendTask(c);
    return;
  }
  if (Buffered()) {
    ParamVector d(x_.layout());
    for (std::size_t j = 0; j < delta_.size(); ++j) d[j] = static_cast<float>(delta_[j]);
    held_.push_back(std::move(d));
    held_weight_.push_back(weight);
    held_tau_.push_back(steps);
    held_loss_.push_back(h.loss);
    held_from_.push_back(from);
    held_attacker_.push_back(!options_.attacker.empty() && options_.attacker[from]);
  } else {
    for (std::size_t j = 0; j < acc_.size(); ++j) acc_[j] += weight * delta_[j];
  }
  if (options_.scaffold) {
    for (std::size_t j = 0; j < acc_c_.size(); ++j) acc_c_[j] += dc[j];
  }
  weight_sum_ += weight;
  tau_sum_ += weight * steps;
  ++results_;
  MaybeClose();
}

void FedServer::PoisonHeld() {
  const auto refused =
      PoisonAndJudge(options_.attack, options_.attack_scale, attack_rng_, held_, held_attacker_, held_tau_,
                     options_.fednova, x_.span(), bounds_, delta_);
  if (refused.empty()) return;
  // As if they had been refused on arrival: out of the round, and the
  // round's sums taken again in arrival order without them.
  for (const std::size_t i : refused) env_.Refuse(held_from_[i], Refusal::kImplausible);
  dropped_ += refused.size();
  accepted_ -= refused.size();
  results_ -= refused.size();
  EraseIndices(refused, held_, held_weight_, held_tau_, held_loss_, held_from_, held_attacker_);
  const HeldSums sums = SumHeld(held_weight_, held_tau_, held_loss_);
  weight_sum_ = sums.weight;
  tau_sum_ = sums.tau;
  loss_sum_ = sums.loss;
}

void FedServer::Apply(std::span<double> delta) { optimizer_.Apply(x_.span(), delta); }

void FedServer::CloseRound() {
  open_ = false;
  if (deadline_timer_ != 0) env_.CancelTimer(deadline_timer_);
  deadline_timer_ = 0;
  // Results still outstanding are stragglers: whatever they send later is dropped.
  for (NodeId c = 0; c < options_.num_clients; ++c) {
    if (pending_[c]) straggling_until_[c] = round_ + 1 + kStragglerRounds;
  }
  if (options_.leave_out_silent) CountSilent();
  std::fill(pending_.begin(), pending_.end(), 0);
  outstanding_ = 0;
  const std::size_t min_results = std::max<std::size_t>(options_.min_results, 1);
  if (results_ >= min_results && Buffered()) PoisonHeld();
  const std::size_t n = results_;
  if (n >= min_results) {
    const bool dp = options_.dp_clip > 0;
    if (Buffered()) {
      std::vector<std::span<const float>> view;
      for (auto& h : held_) view.push_back(h.span());
      Status st = Aggregate(options_.robust, view, held_weight_, last_, delta_);
      if (!st.ok()) {  // too few results for the rule (e.g. Krum): fall back to the median
        RobustOptions median;
        median.rule = AggregationRule::kMedian;
        st = Aggregate(median, view, {}, {}, delta_);
        MURMUR_CHECK_MSG(st.ok(), st.ToString());
      }
      if (!last_.empty()) last_ = delta_;
    } else if (dp) {
      // Noise on the sum, then the fixed denominator K (McMahan et al. 2018).
      if (!options_.dp_client_side)
        AddGaussianNoise(std::span<double>(acc_), options_.dp_noise * clip_.clip(), noise_rng_);
      const auto k = static_cast<double>(options_.clients_per_round);
      for (std::size_t j = 0; j < acc_.size(); ++j) delta_[j] = acc_[j] / k;
    } else {
      for (std::size_t j = 0; j < acc_.size(); ++j) delta_[j] = acc_[j] / weight_sum_;
    }
    if (options_.fednova) {
      const double tau_eff = tau_sum_ / weight_sum_;
      for (double& v : delta_) v *= tau_eff;
    }
    Apply(delta_);
    if (options_.scaffold) {
      const double s = 1.0 / static_cast<double>(options_.num_clients);
      for (std::size_t j = 0; j < acc_c_.size(); ++j) c_[j] = static_cast<float>(c_[j] + s * acc_c_[j]);
    }
    if (dp && options_.dp_adaptive && !options_.dp_client_side) clip_.Update(unclipped_, n, noise_rng_);
  }
  const double loss = n > 0 ? loss_sum_ / static_cast<double>(n) : 0;
  ++round_;
  if (observer_ != nullptr) observer_->OnRoundDone(env_.self(), round_ - 1, loss);
  StartRound();
}

void FedServer::Heard(NodeId client) {
  heard_[client] = 1;
  misses_[client] = 0;
  silent_until_[client] = 0;
}

void FedServer::CountSilent() {
  left_out_.clear();
  for (NodeId c = 0; c < options_.num_clients; ++c) {
    // Given this round's task and online (an offline client's is not
    // pending; under SecAgg+ nothing clears it), and nothing came.
    if (!pending_[c] || heard_[c] || ++misses_[c] < kSilentTasks) continue;
    const std::uint64_t rounds = kStragglerRounds << std::min<std::uint32_t>(misses_[c] - kSilentTasks, 20);
    silent_until_[c] = round_ + 1 + rounds;
    left_out_.emplace_back(c, rounds);
  }
}

// SecAgg+ rounds: one SecAggServer
// session per synchronous round, whose sum replaces the streamed results.

}  // namespace murmur::federated
