// RdpAccountant: the privacy spent by a run of the sampled Gaussian mechanism,
// in Renyi differential privacy (Mironov, CSF 2017), converted to (epsilon, delta).
//
// One federated round with client sampling rate q and noise multiplier z is a
// Poisson-subsampled Gaussian mechanism. At an integer order alpha its RDP is
// (Mironov, Talwar and Zhang 2019, "Renyi Differential Privacy of the Sampled
// Gaussian Mechanism", Sec. 3.3, the exact binomial expansion)
//   RDP(alpha) = 1/(alpha-1) log sum_{i=0..alpha} C(alpha,i) (1-q)^(alpha-i) q^i
//                                                  exp((i^2 - i) / (2 z^2)),
// evaluated in log space; for q = 1 it is alpha / (2 z^2) exactly. RDP adds up
// over rounds. The conversion to (epsilon, delta) is Canonne, Kamath and
// Steinke (2020) / Asoodeh et al. (2021), as in Google's dp_accounting:
//   epsilon = min_alpha RDP(alpha) + log((alpha-1)/alpha) - (log delta + log alpha) / (alpha - 1).
// Orders are the integers 2..64 and 80, 96, 128, 192, 256.
//
// Fixed-size sampling of K of N clients is accounted as Poisson sampling with
// q = K / N, the usual approximation in federated DP (McMahan et al. 2018).
//
// Thread-safety: a value owned by one server.
#pragma once

#include <cstdint>
#include <vector>

#include "core/status.h"

namespace murmur::federated {

class RdpAccountant {
 public:
  RdpAccountant();
  explicit RdpAccountant(std::vector<int> orders);

  // RDP at integer order `alpha` of one step. REQUIRES: alpha >= 2, 0 <= q <= 1, z >= 0.
  static double SubsampledGaussianRdp(double q, double noise_multiplier, int alpha);
  // epsilon for `delta` from RDP values at `orders`; `best_order` (optional) receives the minimizing order.
  static double EpsilonFromRdp(const std::vector<int>& orders, const std::vector<double>& rdp, double delta,
                               int* best_order = nullptr);

  // Adds `steps` rounds of sampling rate q and noise multiplier z.
  void Compose(double q, double noise_multiplier, std::uint64_t steps = 1);
  double Epsilon(double delta, int* best_order = nullptr) const;

  const std::vector<int>& orders() const { return orders_; }
  const std::vector<double>& rdp() const { return rdp_; }
  // Restores the RDP spent (what rdp() returned, for checkpoints):
  // InvalidArgument unless one finite value >= 0 per order.
  Status Restore(std::vector<double> rdp);

 private:
  std::vector<int> orders_;
  std::vector<double> rdp_;
};

}  // namespace murmur::federated
