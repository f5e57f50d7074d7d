// PowerSGD, the low-rank compressor behind MakeCompressor's "powersgd:RANK"
// (compression/compressor.h); docs/compression.md says what it sends.
//
// Thread-safety: as Compressor.
#pragma once

#include <cstdint>
#include <string>

#include "compression/compressor.h"

namespace murmur::compression {

// Orthonormalizes the columns of p in place (modified Gram-Schmidt, in
// column order; Vogels et al. 2019, Alg. 1 line 4). A column that vanishes
// (norm <= 1e-12) stays zero.
void OrthonormalizeColumns(RowMatrixXf& p);

// PowerSGD (Vogels et al. 2019, Alg. 1): per matrix-shaped tensor M
// (rows = shape[0], cols = the rest), P = M Q, orthogonalize P, Q = M^T P,
// send P and Q; Q is kept as the next round's warm start. Tensors where
// rank * (rows + cols) >= rows * cols are sent dense.
class PowerSgdCompressor final : public FixedSpecCompressor {
 public:
  PowerSgdCompressor(std::string spec, std::uint32_t rank, bool error_feedback)
      : FixedSpecCompressor(std::move(spec), error_feedback), rank_(rank) {}
  std::shared_ptr<const Update> Compress(std::span<const float> delta, const Layout& layout,
                                         CompressorState& state, Rng& rng) const override;
  std::uint32_t rank() const { return rank_; }

 private:
  std::uint32_t rank_;
};

}  // namespace murmur::compression
