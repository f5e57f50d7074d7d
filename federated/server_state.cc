// FedServer's SecAgg+ rounds and the state a daemon checkpoints
// (federated/server.h).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>

#include "core/check.h"
#include "federated/server.h"

namespace murmur::federated {

void FedServer::StartSecureRound(std::vector<NodeId> clients) {
  SecAggServerOptions o = options_.secagg;
  o.length = x_.size() + 2;  // [w Delta, w, w loss]
  if (o.input_timeout.count() == 0) o.input_timeout = options_.deadline;
  const std::uint64_t r = round_;
  secagg_ =
      std::make_unique<SecAggServer>(env_, r, std::move(clients), std::move(o), [this, r](SecAggOutcome out) {
        // The session may still be on the call stack: finish the round from a fresh event.
        auto held = std::make_shared<SecAggOutcome>(std::move(out));
        env_.StartTimer(Nanos(0), [this, r, held] {
          if (open_ && round_ == r) OnSecAggDone(std::move(*held));
        });
      });
  secagg_->Start();
}

Status FedServer::JudgeSecureSum(const SecAggOutcome& outcome) {
  // The server sees only the sum, so it judges the round's mean difference
  // as it would judge one result (federated/admission.h): a masked input
  // outside the quantizer's range wraps around the ring, and nobody can be
  // named for it, so such a round is not applied.
  const std::size_t d = x_.size();
  if (outcome.sum.size() != d + 2 || !(outcome.sum[d] > 0)) return Status::Ok();
  for (std::size_t j = 0; j < d; ++j) delta_[j] = outcome.sum[j] / outcome.sum[d];
  if (JudgeDifference(delta_, x_.span(), bounds_))
    return Status::FailedPrecondition(
        "secure aggregation: the sum's mean difference is longer than plausibility times the model's "
        "norm; the round is not applied");
  return Status::Ok();
}

void FedServer::OnSecAggDone(SecAggOutcome outcome) {
  secagg_.reset();
  secagg_dropped_ += outcome.dropped;
  // A complaint names two clients, one of which misbehaved; which one, no
  // one can tell. One complaint excludes the accused from the round (it
  // costs the round one input); two or more from different clients, which
  // one insider cannot produce against an honest client, also book it.
  secagg_complaints_ = outcome.complaints;
  std::map<NodeId, std::size_t> accusers;
  for (const auto& [complainer, accused] : outcome.complaints) ++accusers[accused];
  for (const auto& [accused, n] : accusers)
    if (n >= 2) env_.Refuse(accused, Refusal::kBadShares);
  if (outcome.status.ok()) outcome.status = JudgeSecureSum(outcome);
  secagg_status_ = outcome.status;
  const std::size_t d = x_.size();
  results_ = 0;
  if (!outcome.status.ok()) {
    ++secagg_aborted_;
  } else if (outcome.sum.size() == d + 2 && outcome.sum[d] > 0) {
    for (std::size_t j = 0; j < d; ++j) acc_[j] = outcome.sum[j];
    weight_sum_ = outcome.sum[d];
    results_ = outcome.survivors.size();
    for (NodeId c : outcome.survivors)  // their masked inputs are in the sum
      if (c < contributed_.size() && !contributed_[c]) {
        contributed_[c] = 1;
        ++contributors_;
      }
    loss_sum_ =
        outcome.sum[d + 1] / outcome.sum[d] * static_cast<double>(results_);  // weighted mean x results
    tau_sum_ = weight_sum_;
    accepted_ += results_;
  }
  CloseRound();
}

// ExportState / ImportState (federated/server.h, "Resuming"): the
// names of a ServerState's entries and their checks.

namespace {

constexpr double kMaxExactCount = 9007199254740992.0;  // 2^53: every integer below is a double

void PutStream(ServerState& s, const std::string& prefix, const Rng::Position& p) {
  s.scalars[prefix + "rng_block"] = static_cast<double>(p.block);
  s.scalars[prefix + "rng_used"] = p.used;
  s.scalars[prefix + "rng_has_spare_normal"] = p.has_spare_normal ? 1 : 0;
  s.scalars[prefix + "rng_spare_normal"] = p.has_spare_normal ? p.spare_normal : 0.0;
}

Status Missing(const std::string& name) {
  return Status::InvalidArgument("server state has no '" + name + "'");
}

// A count in [0, max], stored as a double.
Status Count(const ServerState& s, const std::string& name, double max, std::uint64_t* out) {
  auto it = s.scalars.find(name);
  if (it == s.scalars.end()) return Missing(name);
  const double x = it->second;
  if (!(x >= 0 && x <= max && x == std::floor(x)))
    return Status::InvalidArgument("server state '" + name + "' = " + std::to_string(x) +
                                   " is not an integer in 0.." + std::to_string(max));
  *out = static_cast<std::uint64_t>(x);
  return Status::Ok();
}

// Stream `prefix`'s position; `*found` false when it has none and `optional`.
Status GetStream(const ServerState& s, const std::string& prefix, bool optional, Rng::Position* p,
                 bool* found) {
  *found = s.scalars.count(prefix + "rng_block") != 0;
  if (!*found) return optional ? Status::Ok() : Missing(prefix + "rng_block");
  std::uint64_t used = 0, spare = 0;
  MURMUR_RETURN_IF_ERROR(Count(s, prefix + "rng_block", kMaxExactCount, &p->block));
  MURMUR_RETURN_IF_ERROR(Count(s, prefix + "rng_used", 4, &used));
  MURMUR_RETURN_IF_ERROR(Count(s, prefix + "rng_has_spare_normal", 1, &spare));
  auto it = s.scalars.find(prefix + "rng_spare_normal");
  if (it == s.scalars.end()) return Missing(prefix + "rng_spare_normal");
  if (used < 4 && p->block == 0)
    return Status::InvalidArgument("server state '" + prefix +
                                   "rng_used' < 4 before the stream's first block");
  if (!std::isfinite(it->second))
    return Status::InvalidArgument("server state '" + prefix + "rng_spare_normal' is not finite");
  p->used = static_cast<int>(used);
  p->has_spare_normal = spare != 0;
  p->spare_normal = it->second;
  return Status::Ok();
}

// Vector `name` of exactly `size` finite values.
Status Vector(const ServerState& s, const std::string& name, std::size_t size, std::vector<double>* out) {
  auto it = s.vectors.find(name);
  if (it == s.vectors.end()) return Missing(name);
  if (it->second.size() != size)
    return Status::InvalidArgument("server state '" + name + "' has " + std::to_string(it->second.size()) +
                                   " values, this server keeps " + std::to_string(size));
  for (double x : it->second)
    if (!std::isfinite(x))
      return Status::InvalidArgument("server state '" + name + "' holds a non-finite value");
  *out = it->second;
  return Status::Ok();
}

}  // namespace

ServerState FedServer::ExportState() const {
  ServerState s;
  s.scalars["round"] = static_cast<double>(round_);
  s.scalars["clip"] = clip_.clip();
  s.scalars["results_accepted"] = static_cast<double>(accepted_);
  s.scalars["results_dropped"] = static_cast<double>(dropped_);
  s.scalars["secagg_rounds_aborted"] = static_cast<double>(secagg_aborted_);
  s.scalars["secagg_clients_dropped"] = static_cast<double>(secagg_dropped_);
  s.vectors["optimizer/m"] = optimizer_.first_moment();
  s.vectors["optimizer/v"] = optimizer_.second_moment();
  if (options_.scaffold) s.vectors["scaffold/c"].assign(c_.span().begin(), c_.span().end());
  if (!last_.empty()) s.vectors["robust/last"] = last_;
  s.vectors["accountant/rdp"] = accountant_.rdp();
  PutStream(s, "selection/", selector_.rng_position());
  s.vectors["selection/utility"] = selector_.utilities();
  s.vectors["selection/duration"] = selector_.durations();
  auto& straggling = s.vectors["straggling_until"];
  for (std::uint64_t r : straggling_until_) straggling.push_back(static_cast<double>(r));
  auto& contributed = s.vectors["contributed"];
  for (std::uint8_t c : contributed_) contributed.push_back(c);
  PutStream(s, "noise/", noise_rng_.position());
  PutStream(s, "attack/", attack_rng_.position());
  return s;
}

Status FedServer::ImportState(const ServerState& s) {
  const std::size_t n = options_.num_clients;
  std::uint64_t round = 0;
  MURMUR_RETURN_IF_ERROR(Count(s, "round", kMaxExactCount, &round));
  std::uint64_t accepted = 0, dropped = 0, aborted = 0, secagg_dropped = 0;
  MURMUR_RETURN_IF_ERROR(Count(s, "results_accepted", kMaxExactCount, &accepted));
  MURMUR_RETURN_IF_ERROR(Count(s, "results_dropped", kMaxExactCount, &dropped));
  MURMUR_RETURN_IF_ERROR(Count(s, "secagg_rounds_aborted", kMaxExactCount, &aborted));
  MURMUR_RETURN_IF_ERROR(Count(s, "secagg_clients_dropped", kMaxExactCount, &secagg_dropped));
  auto clip = s.scalars.find("clip");
  if (clip == s.scalars.end()) return Missing("clip");
  if (options_.dp_clip > 0 && !(clip->second > 0 && std::isfinite(clip->second)))
    return Status::InvalidArgument("server state 'clip' = " + std::to_string(clip->second) +
                                   " is not a finite clip norm > 0");
  std::vector<double> m, v, c, last, rdp, utility, duration, straggling, contributed;
  MURMUR_RETURN_IF_ERROR(Vector(s, "optimizer/m", optimizer_.first_moment().size(), &m));
  MURMUR_RETURN_IF_ERROR(Vector(s, "optimizer/v", optimizer_.second_moment().size(), &v));
  if (options_.scaffold) MURMUR_RETURN_IF_ERROR(Vector(s, "scaffold/c", c_.size(), &c));
  if (!last_.empty()) MURMUR_RETURN_IF_ERROR(Vector(s, "robust/last", last_.size(), &last));
  MURMUR_RETURN_IF_ERROR(Vector(s, "accountant/rdp", accountant_.rdp().size(), &rdp));
  MURMUR_RETURN_IF_ERROR(Vector(s, "selection/utility", n, &utility));
  MURMUR_RETURN_IF_ERROR(Vector(s, "selection/duration", n, &duration));
  MURMUR_RETURN_IF_ERROR(Vector(s, "straggling_until", n, &straggling));
  MURMUR_RETURN_IF_ERROR(Vector(s, "contributed", n, &contributed));
  for (double x : straggling)
    if (!(x >= 0 && x <= kMaxExactCount && x == std::floor(x)))
      return Status::InvalidArgument("server state 'straggling_until' holds a value that is not a round");
  for (double x : contributed)
    if (x != 0 && x != 1)
      return Status::InvalidArgument("server state 'contributed' holds a value not 0 or 1");
  Rng::Position selection, noise, attack;
  bool found = false, has_noise = false, has_attack = false;
  MURMUR_RETURN_IF_ERROR(GetStream(s, "selection/", false, &selection, &found));
  MURMUR_RETURN_IF_ERROR(GetStream(s, "noise/", true, &noise, &has_noise));
  MURMUR_RETURN_IF_ERROR(GetStream(s, "attack/", true, &attack, &has_attack));
  // Checked: from here on nothing fails but the components' own checks, which repeat the above.
  MURMUR_RETURN_IF_ERROR(optimizer_.Restore(std::move(m), std::move(v)));
  MURMUR_RETURN_IF_ERROR(accountant_.Restore(std::move(rdp)));
  MURMUR_RETURN_IF_ERROR(selector_.Restore(selection, std::move(utility), std::move(duration)));
  round_ = round;
  accepted_ = accepted;
  dropped_ = dropped;
  secagg_aborted_ = aborted;
  secagg_dropped_ = secagg_dropped;
  if (options_.dp_clip > 0) clip_.set_clip(clip->second);
  for (std::size_t j = 0; j < c.size(); ++j) c_[j] = static_cast<float>(c[j]);
  if (!last_.empty()) last_ = std::move(last);
  contributors_ = 0;
  for (std::size_t i = 0; i < n; ++i) {
    straggling_until_[i] = static_cast<std::uint64_t>(straggling[i]);
    contributed_[i] = contributed[i] != 0 ? 1 : 0;
    contributors_ += contributed_[i];
  }
  if (has_noise) noise_rng_.Seek(noise);
  if (has_attack) attack_rng_.Seek(attack);
  return Status::Ok();
}

}  // namespace murmur::federated
