#include "federated/secagg_quantizer.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "core/check.h"

namespace murmur::federated {

Status SecAggQuantizer::Check(const QuantizerOptions& o, std::size_t max_clients) {
  if (o.bits < 1 || o.bits > 31) {
    return Status::InvalidArgument("secure aggregation: " + std::to_string(o.bits) +
                                   " quantization bits, allowed 1 to 31");
  }
  if (!(o.range > 0) || !std::isfinite(o.range)) {
    return Status::InvalidArgument("secure aggregation: clipping range must be a positive number");
  }
  const std::uint64_t levels = (std::uint64_t{1} << o.bits) - 1;
  if (max_clients > 0 && levels * max_clients > 0xFFFFFFFFull) {
    return Status::InvalidArgument(
        "secure aggregation: " + std::to_string(max_clients) + " clients of " + std::to_string(o.bits) +
        " bits overflow the 32-bit ring; need bits + ceil(log2 " + std::to_string(max_clients) + ") <= 32");
  }
  return Status::Ok();
}

SecAggQuantizer::SecAggQuantizer(QuantizerOptions options) : options_(options) {
  MURMUR_CHECK(Check(options_, 1).ok());
  levels_ = static_cast<double>((std::uint64_t{1} << options_.bits) - 1);
  step_ = 2 * options_.range / levels_;
}

void SecAggQuantizer::Quantize(std::span<const double> values, std::span<std::uint32_t> out) const {
  MURMUR_CHECK(values.size() == out.size());
  const double r = options_.range;
  for (std::size_t i = 0; i < values.size(); ++i) {
    const double v = std::isfinite(values[i]) ? std::clamp(values[i], -r, r) : 0.0;
    out[i] = static_cast<std::uint32_t>(std::clamp(std::nearbyint((v + r) / step_), 0.0, levels_));
  }
}

void SecAggQuantizer::Dequantize(std::span<const std::uint32_t> sum, std::size_t clients,
                                 std::span<double> out) const {
  MURMUR_CHECK(sum.size() == out.size());
  const double offset = static_cast<double>(clients) * options_.range;
  for (std::size_t i = 0; i < sum.size(); ++i) out[i] = static_cast<double>(sum[i]) * step_ - offset;
}

double SecAggQuantizer::ErrorBound(std::size_t clients) const {
  return static_cast<double>(clients) * options_.range / levels_;
}

}  // namespace murmur::federated
