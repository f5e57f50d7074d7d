// The dense and sparse compressors behind MakeCompressor (compression/compressor.h;
// PowerSGD is in compression/powersgd.h).
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
class DenseCompressor final : public FixedSpecCompressor {
 public:
  DenseCompressor(std::string spec, ValueCoding coding, bool error_feedback)
      : FixedSpecCompressor(std::move(spec), error_feedback), coding_(coding) {}
  std::shared_ptr<const Update> Compress(std::span<const float> delta, const Layout& layout,
                                         CompressorState& state, Rng& rng) const override;
  const ValueCoding& coding() const { return coding_; }

 private:
  ValueCoding coding_;
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
class SparseCompressor final : public FixedSpecCompressor {
 public:
  SparseCompressor(std::string spec, SparseOptions options)
      : FixedSpecCompressor(std::move(spec), options.error_feedback), options_(options) {}
  std::shared_ptr<const Update> Compress(std::span<const float> delta, const Layout& layout,
                                         CompressorState& state, Rng& rng) const override;
  std::size_t KFor(std::size_t n) const;
  const SparseOptions& options() const { return options_; }

 private:
  SparseOptions options_;
};

}  // namespace murmur::compression
