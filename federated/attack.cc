#include "federated/attack.h"

#include <cmath>

#include "core/check.h"
#include "federated/privacy.h"

namespace murmur::federated {

Result<AttackKind> ParseAttack(const std::string& name) {
  if (name == "none") return AttackKind::kNone;
  if (name == "sign-flip") return AttackKind::kSignFlip;
  if (name == "gaussian") return AttackKind::kGaussian;
  if (name == "alie") return AttackKind::kAlie;
  if (name == "ipm") return AttackKind::kIpm;
  if (name == "label-flip") return AttackKind::kLabelFlip;
  return Status::InvalidArgument("attack '" + name +
                                 "' is not one of none, sign-flip, gaussian, alie, ipm, label-flip");
}

double NormalQuantile(double p) {
  MURMUR_CHECK(p > 0 && p < 1);
  // Bisection on Phi(x) = erfc(-x / sqrt 2) / 2, monotone; 200 halvings reach double precision.
  double lo = -40, hi = 40;
  for (int i = 0; i < 200; ++i) {
    const double mid = 0.5 * (lo + hi);
    if (0.5 * std::erfc(-mid / std::sqrt(2.0)) < p) {
      lo = mid;
    } else {
      hi = mid;
    }
  }
  return 0.5 * (lo + hi);
}

double AlieZ(std::size_t k, std::size_t f) {
  const auto s = static_cast<double>(k / 2 + 1) - static_cast<double>(f);
  const double p = (static_cast<double>(k) - s) / static_cast<double>(k);
  if (p <= 0 || p >= 1) return 0;
  return NormalQuantile(p);
}

void ApplyAttack(AttackKind kind, double scale, std::span<const std::span<float>> updates,
                 const std::vector<bool>& attacker, Rng& rng) {
  MURMUR_CHECK(attacker.size() == updates.size());
  if (!PoisonsUpdates(kind) || updates.empty()) return;
  const std::size_t k = updates.size(), d = updates[0].size();
  std::size_t f = 0;
  for (bool a : attacker) f += a;
  if (f == 0) return;
  if (kind == AttackKind::kSignFlip || kind == AttackKind::kGaussian) {
    for (std::size_t i = 0; i < k; ++i) {
      if (!attacker[i]) continue;
      if (kind == AttackKind::kSignFlip) {
        for (float& x : updates[i]) x = static_cast<float>(-scale * x);
      } else {
        const double sd = scale * L2Norm(updates[i]) / std::sqrt(static_cast<double>(d));
        for (float& x : updates[i]) x = static_cast<float>(sd * rng.Normal());
      }
    }
    return;
  }
  // ALIE and IPM: statistics of every honestly computed update of the round.
  std::vector<double> mean(d, 0.0), var(d, 0.0);
  for (const auto& u : updates) {
    for (std::size_t j = 0; j < d; ++j) mean[j] += u[j];
  }
  for (double& m : mean) m /= static_cast<double>(k);
  for (const auto& u : updates) {
    for (std::size_t j = 0; j < d; ++j) var[j] += (u[j] - mean[j]) * (u[j] - mean[j]);
  }
  const double z = AlieZ(k, f);
  for (std::size_t i = 0; i < k; ++i) {
    if (!attacker[i]) continue;
    for (std::size_t j = 0; j < d; ++j) {
      const double v = kind == AttackKind::kAlie ? mean[j] - z * std::sqrt(var[j] / static_cast<double>(k))
                                                 : -scale * mean[j];
      updates[i][j] = static_cast<float>(v);
    }
  }
}

}  // namespace murmur::federated
