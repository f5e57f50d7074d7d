// Fixed-point quantization of client updates for secure aggregation.
//
// Masks live in the ring Z_{2^32}, so inputs must be integers there. A client
// clips each value to [-R, R] (R = `range`) and maps it to
//   q = round((clip(v) + R) / step),   step = 2R / (2^bits - 1),
// an integer in [0, 2^bits - 1]. The server gets Q = sum_u q_u mod 2^32 over
// the m surviving clients, which is the exact integer sum as long as
// m (2^bits - 1) < 2^32 (the headroom: bits + ceil(log2 m) <= 32), and returns
//   S = Q step - m R.
// Rounding to nearest puts each client within step / 2 of its clipped value,
// so |S - sum_u clip(v_u)| <= m step / 2 = m R / (2^bits - 1) per coordinate
// (about m R / 2^bits). Values outside [-R, R] are clipped, an error this bound
// does not cover; callers choose R (and pre-scale) so that updates fit.
//
// Thread-safety: immutable after construction.
#pragma once

#include <cstdint>
#include <span>

#include "core/status.h"

namespace murmur::federated {

struct QuantizerOptions {
  int bits = 20;       // per-client quantization bits
  double range = 4.0;  // R: values are clipped to [-R, R]
};

class SecAggQuantizer {
 public:
  // InvalidArgument unless 1 <= bits <= 31, R > 0 finite, and max_clients
  // clients' sums fit in 32 bits: max_clients (2^bits - 1) < 2^32.
  static Status Check(const QuantizerOptions& options, std::size_t max_clients);

  // REQUIRES: Check(options, 1) is Ok.
  explicit SecAggQuantizer(QuantizerOptions options);

  void Quantize(std::span<const double> values, std::span<std::uint32_t> out) const;
  // The sum of `clients` clients' values from the sum of their quantized values.
  void Dequantize(std::span<const std::uint32_t> sum, std::size_t clients, std::span<double> out) const;
  // The bound on |Dequantize(sum) - sum of clipped values| per coordinate: m R / (2^bits - 1).
  double ErrorBound(std::size_t clients) const;
  double step() const { return step_; }

 private:
  QuantizerOptions options_;
  double levels_;  // 2^bits - 1
  double step_;
};

}  // namespace murmur::federated
