// The concrete compressors behind MakeCompressor (compression/compressor.h).
// Each is configured once and then const; see docs/compression.md for what
// each sends, its bias and whether it needs error feedback.
//
// Thread-safety: as Compressor.
#pragma once

#include <string>

#include "compression/compressor.h"

namespace murmur::compression {

// Every element, in one value coding: none (fp32), fp16, bf16, int8 (per-block
// scales, stochastic rounding), qsgd:s, sign (scale ||x||_1 / d), terngrad.
class DenseCompressor final : public Compressor {
 public:
  DenseCompressor(std::string spec, ValueCoding coding, bool error_feedback)
      : spec_(std::move(spec)), coding_(coding), ef_(error_feedback) {}
  const std::string& spec() const override { return spec_; }
  bool error_feedback() const override { return ef_; }
  std::shared_ptr<const Update> Compress(std::span<const float> delta, const Layout& layout,
                                         CompressorState& state, Rng& rng) const override;

 private:
  std::string spec_;
  ValueCoding coding_;
  bool ef_;
};

enum class Selection { kTopK, kTopKApprox, kRandomK, kThreshold };

struct SparseOptions {
  Selection selection = Selection::kTopK;
  double fraction = 0.01;   // k = max(1, round(fraction * n)) when count == 0
  std::size_t count = 0;    // k when > 0
  float threshold = 0;      // kThreshold: send |x| >= threshold
  bool per_tensor = false;  // top-k within each tensor of the layout (k per tensor)
  bool unbiased = false;    // kRandomK: scale values by n / k
  ValueCoding values;       // coding of the selected values
  bool error_feedback = true;
  float dgc_momentum = 0;  // > 0: DGC momentum correction and factor masking
};

// A sparsifier followed by value quantization, with error feedback fused into
// the selecting pass: acc = e + x, send the selected, e = acc - sent.
class SparseCompressor final : public Compressor {
 public:
  SparseCompressor(std::string spec, SparseOptions options) : spec_(std::move(spec)), options_(options) {}
  const std::string& spec() const override { return spec_; }
  bool error_feedback() const override { return options_.error_feedback; }
  std::shared_ptr<const Update> Compress(std::span<const float> delta, const Layout& layout,
                                         CompressorState& state, Rng& rng) const override;
  std::size_t KFor(std::size_t n) const;

 private:
  std::string spec_;
  SparseOptions options_;
};

// PowerSGD (Vogels et al. 2019, Alg. 1): per matrix-shaped tensor M
// (rows = shape[0], cols = the rest), P = M Q, orthogonalize P, Q = M^T P,
// send P and Q; Q is kept as the next round's warm start. Tensors where
// rank * (rows + cols) >= rows * cols are sent dense.
class PowerSgdCompressor final : public Compressor {
 public:
  PowerSgdCompressor(std::string spec, std::uint32_t rank, bool error_feedback)
      : spec_(std::move(spec)), rank_(rank), ef_(error_feedback) {}
  const std::string& spec() const override { return spec_; }
  bool error_feedback() const override { return ef_; }
  std::shared_ptr<const Update> Compress(std::span<const float> delta, const Layout& layout,
                                         CompressorState& state, Rng& rng) const override;

 private:
  std::string spec_;
  std::uint32_t rank_;
  bool ef_;
};

}  // namespace murmur::compression
