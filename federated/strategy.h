// ServerOptimizer: how a federated server turns the round's aggregated model
// difference into its next global model.
//
// The server sees the pseudo-gradient Delta = aggregate_i (x_i - x) (clients'
// models minus the global model it sent) and treats -Delta as a gradient
// (Reddi et al., "Adaptive Federated Optimization", ICLR 2021, Algorithm 2):
//   FedAvg      x <- x + lr Delta                                    (McMahan et al. 2017)
//   FedAvgM     v <- beta v + Delta;  x <- x + lr v                  (Hsu et al. 2019)
//               with nesterov: x <- x + lr (Delta + beta v), DiLoCo's outer
//               step (Douillard et al. 2023) with exact averaging
//   FedAdagrad  m <- b1 m + (1-b1) Delta;  v <- v + Delta^2
//   FedAdam     m as above;  v <- b2 v + (1-b2) Delta^2
//   FedYogi     m as above;  v <- v - (1-b2) Delta^2 sign(v - Delta^2)
//               x <- x + lr m / (sqrt(v) + tau)  for the three adaptive ones,
// with v starting at tau^2 (Reddi et al. initialize v_{-1} >= tau^2).
// State and arithmetic are in double: with lr = 1 FedAvg reproduces the
// clients' average model exactly (a single client's model bit for bit).
//
// Thread-safety: one server owns its optimizer.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "core/status.h"

namespace murmur::federated {

enum class ServerOptimizerKind { kFedAvg, kFedAvgM, kFedAdagrad, kFedAdam, kFedYogi };

struct ServerOptimizerOptions {
  ServerOptimizerKind kind = ServerOptimizerKind::kFedAvg;
  double lr = 1.0;        // server step size: 1 for FedAvg/FedAvgM, 0.01 for the adaptive ones
  double momentum = 0.9;  // FedAvgM's beta
  double beta1 = 0.9;     // adaptive: first-moment decay
  double beta2 = 0.99;    // FedAdam/FedYogi: second-moment decay
  double tau = 1e-3;      // adaptive: degree of adaptivity (denominator floor)
  bool nesterov = false;  // FedAvgM: Nesterov's look-ahead (DiLoCo's outer step)
};

// The documented default server step size of each kind (1 or 0.01).
double DefaultServerLr(ServerOptimizerKind kind);

// "fedavg", "fedavgm", "fedadagrad", "fedadam", "fedyogi".
Result<ServerOptimizerKind> ParseServerOptimizer(const std::string& name);
const char* ServerOptimizerName(ServerOptimizerKind kind);

class ServerOptimizer {
 public:
  ServerOptimizer(ServerOptimizerOptions options, std::size_t size);

  // x <- update(x, delta). REQUIRES: x.size() == delta.size() == size.
  void Apply(std::span<float> x, std::span<const double> delta);

  const ServerOptimizerOptions& options() const { return options_; }
  // Floats of state (for memory accounting): 0, 1 or 2 vectors, in doubles.
  std::size_t state_doubles() const { return m_.size() + v_.size(); }
  // The state, for checkpoints: the velocity or first moment (empty for
  // FedAvg) and the second moment (empty unless adaptive).
  const std::vector<double>& first_moment() const { return m_; }
  const std::vector<double>& second_moment() const { return v_; }
  // Restores what first_moment() and second_moment() returned: InvalidArgument
  // when a size differs from this optimizer's or a value is not finite.
  Status Restore(std::vector<double> m, std::vector<double> v);

 private:
  ServerOptimizerOptions options_;
  std::size_t size_;
  std::vector<double> m_;  // FedAvgM velocity or first moment
  std::vector<double> v_;  // second moment
};

}  // namespace murmur::federated
