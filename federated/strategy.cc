#include "federated/strategy.h"

#include <cmath>

#include "core/check.h"

namespace murmur::federated {

double DefaultServerLr(ServerOptimizerKind kind) {
  return kind == ServerOptimizerKind::kFedAvg || kind == ServerOptimizerKind::kFedAvgM ? 1.0 : 0.01;
}

Result<ServerOptimizerKind> ParseServerOptimizer(const std::string& name) {
  if (name == "fedavg") return ServerOptimizerKind::kFedAvg;
  if (name == "fedavgm") return ServerOptimizerKind::kFedAvgM;
  if (name == "fedadagrad") return ServerOptimizerKind::kFedAdagrad;
  if (name == "fedadam") return ServerOptimizerKind::kFedAdam;
  if (name == "fedyogi") return ServerOptimizerKind::kFedYogi;
  return Status::InvalidArgument("server optimizer '" + name +
                                 "' is not one of fedavg, fedavgm, fedadagrad, fedadam, fedyogi");
}

const char* ServerOptimizerName(ServerOptimizerKind kind) {
  switch (kind) {
    case ServerOptimizerKind::kFedAvg: return "fedavg";
    case ServerOptimizerKind::kFedAvgM: return "fedavgm";
    case ServerOptimizerKind::kFedAdagrad: return "fedadagrad";
    case ServerOptimizerKind::kFedAdam: return "fedadam";
    case ServerOptimizerKind::kFedYogi: return "fedyogi";
  }
  return "?";
}

ServerOptimizer::ServerOptimizer(ServerOptimizerOptions options, std::size_t size)
    : options_(options), size_(size) {
  if (options_.kind != ServerOptimizerKind::kFedAvg) m_.assign(size, 0.0);
  if (options_.kind != ServerOptimizerKind::kFedAvg && options_.kind != ServerOptimizerKind::kFedAvgM) {
    v_.assign(size, options_.tau * options_.tau);
  }
}

Status ServerOptimizer::Restore(std::vector<double> m, std::vector<double> v) {
  const std::pair<const char*, const std::vector<double>*> parts[] = {{"first moment", &m},
                                                                      {"second moment", &v}};
  const std::vector<double>* own[] = {&m_, &v_};
  for (int k = 0; k < 2; ++k) {
    const auto& [what, got] = parts[k];
    if (got->size() != own[k]->size())
      return Status::InvalidArgument(std::string("server optimizer ") + what + " of " +
                                     std::to_string(got->size()) + " values (" +
                                     ServerOptimizerName(options_.kind) + " of this model keeps " +
                                     std::to_string(own[k]->size()) + ")");
    for (double x : *got)
      if (!std::isfinite(x))
        return Status::InvalidArgument(std::string("server optimizer ") + what + " holds a non-finite value");
  }
  m_ = std::move(m);
  v_ = std::move(v);
  return Status::Ok();
}

void ServerOptimizer::Apply(std::span<float> x, std::span<const double> delta) {
  MURMUR_CHECK(x.size() == size_ && delta.size() == size_);
  const double lr = options_.lr;
  switch (options_.kind) {
    case ServerOptimizerKind::kFedAvg:
      for (std::size_t j = 0; j < size_; ++j) x[j] = static_cast<float>(x[j] + lr * delta[j]);
      return;
    case ServerOptimizerKind::kFedAvgM:
      for (std::size_t j = 0; j < size_; ++j) {
        m_[j] = options_.momentum * m_[j] + delta[j];
        const double step = options_.nesterov ? delta[j] + options_.momentum * m_[j] : m_[j];
        x[j] = static_cast<float>(x[j] + lr * step);
      }
      return;
    default: break;
  }
  const double b1 = options_.beta1, b2 = options_.beta2, tau = options_.tau;
  for (std::size_t j = 0; j < size_; ++j) {
    const double d = delta[j], d2 = d * d;
    m_[j] = b1 * m_[j] + (1 - b1) * d;
    switch (options_.kind) {
      case ServerOptimizerKind::kFedAdagrad: v_[j] += d2; break;
      case ServerOptimizerKind::kFedAdam: v_[j] = b2 * v_[j] + (1 - b2) * d2; break;
      default: {  // Yogi: additive, sign-controlled second moment (Zaheer et al. 2018)
        const double s = v_[j] > d2 ? 1.0 : (v_[j] < d2 ? -1.0 : 0.0);
        v_[j] -= (1 - b2) * d2 * s;
      }
    }
    x[j] = static_cast<float>(x[j] + lr * m_[j] / (std::sqrt(v_[j]) + tau));
  }
}

}  // namespace murmur::federated
