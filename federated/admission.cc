#include "federated/admission.h"

#include <algorithm>
#include <cmath>

#include "core/reduce.h"

namespace murmur::federated {

std::optional<Refusal> CheckResult(const FedMessage& m, const ResultBounds& bounds) {
  const FedHeader& h = m.header();
  if (!std::isfinite(h.weight) || h.weight <= 0 || (bounds.max_weight > 0 && h.weight > bounds.max_weight))
    return Refusal::kImplausible;
  if (!std::isfinite(h.loss)) return Refusal::kNotFinite;
  for (const auto& u : m.updates()) {
    if (const float* v = u->dense_f32(); v != nullptr) {
      for (std::size_t j = 0; j < u->size(); ++j)
        if (!std::isfinite(v[j])) return Refusal::kNotFinite;
    }
  }
  return std::nullopt;
}

std::optional<Refusal> JudgeDifference(std::span<const double> delta, std::span<const float> x,
                                       const ResultBounds& bounds) {
  if (bounds.plausibility <= 0) return std::nullopt;
  const double d2 = FixedSquaredNorm(delta);
  if (!std::isfinite(d2)) return Refusal::kImplausible;  // only if a caller passed non-finite values
  const double x2 = std::max(SquaredNormOrDouble(x), bounds.length_floor * bounds.length_floor);
  if (x2 > 0 && std::isfinite(x2) && d2 > bounds.plausibility * bounds.plausibility * x2)
    return Refusal::kImplausible;
  return std::nullopt;
}

double ClientNoiseLength(double clip, double noise_multiplier, std::size_t clients_per_round, std::size_t d) {
  if (clip <= 0) return 0;
  const double k = static_cast<double>(std::max<std::size_t>(clients_per_round, 1));
  return clip + noise_multiplier * clip * std::sqrt(static_cast<double>(d) / k);
}

std::vector<std::size_t> PoisonAndJudge(AttackKind attack, double attack_scale, Rng& rng,
                                        std::vector<ParamVector>& held, const std::vector<bool>& attacker,
                                        const std::vector<double>& tau, bool fednova,
                                        std::span<const float> x, const ResultBounds& bounds,
                                        std::vector<double>& scratch) {
  std::vector<std::span<float>> mut;
  for (auto& h : held) mut.push_back(h.span());
  ApplyAttack(attack, attack_scale, mut, attacker, rng);
  std::vector<std::size_t> out;
  if (bounds.plausibility <= 0) return out;
  scratch.resize(x.size());
  for (std::size_t i = 0; i < held.size(); ++i) {
    if (!attacker[i]) continue;
    const double scale = fednova ? tau[i] : 1.0;
    for (std::size_t j = 0; j < x.size(); ++j) scratch[j] = static_cast<double>(held[i][j]) * scale;
    if (JudgeDifference(scratch, x, bounds)) out.push_back(i);
  }
  return out;
}

HeldSums SumHeld(const std::vector<double>& weight, const std::vector<double>& tau,
                 const std::vector<double>& loss) {
  HeldSums s;
  for (std::size_t i = 0; i < weight.size(); ++i) {
    s.weight += weight[i];
    s.tau += weight[i] * tau[i];
    s.loss += loss[i];
  }
  return s;
}

}  // namespace murmur::federated
