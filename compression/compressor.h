// Compressor: turns a model delta into an Update, with per-node state.
//
// A Compressor holds configuration only and is shared (const) by every node
// that uses the same spec; what a node carries from round to round (the
// error-feedback residual, DGC momentum, PowerSGD's warm-started Q, the round
// counter) lives in that node's CompressorState. Receivers apply an update
// with Update::AddTo, which never builds a dense copy of a sparse update.
//
// Implementations (compression/compressors.h): dense value quantizers
// (none, fp16, bf16, int8, qsgd, sign, terngrad), sparsifiers (topk,
// topk-approx, randk, threshold) optionally followed by value quantization,
// and PowerSGD. Build one from a spec string with MakeCompressor; the grammar
// and each compressor's properties are in docs/compression.md.
//
// Thread-safety: Compress is const and reentrant; a CompressorState and an
// Rng belong to one thread at a time.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "compression/update.h"
#include "core/param_vector.h"
#include "core/rng.h"
#include "core/status.h"

namespace murmur::compression {

struct CompressorState {
  std::uint64_t node = 0;                      // this node's id: keys random-k index sets with the round
  std::uint64_t round = 0;                     // incremented by every Compress
  std::vector<float> residual;                 // error feedback e (sized on first use)
  std::vector<float> momentum;                 // DGC momentum u (sized on first use)
  std::vector<std::vector<float>> powersgd_q;  // PowerSGD Q per tensor (cols x rank, row-major)
};

class Compressor {
 public:
  virtual ~Compressor() = default;

  // The spec this compressor was built from.
  virtual const std::string& spec() const = 0;
  // Whether Compress keeps an error-feedback residual in the state.
  virtual bool error_feedback() const = 0;

  // Compresses `delta` (a model delta shaped by `layout`; an empty layout
  // means one flat tensor), updating `state` and drawing from `rng`.
  // REQUIRES: layout.num_tensors() == 0 || layout.total_size() == delta.size();
  // delta.size() < 2^32; the same delta size on every call with one state.
  virtual std::shared_ptr<const Update> Compress(std::span<const float> delta, const Layout& layout,
                                                 CompressorState& state, Rng& rng) const = 0;

  std::shared_ptr<const Update> Compress(const ParamVector& delta, CompressorState& state, Rng& rng) const {
    return Compress(delta.span(), delta.layout(), state, rng);
  }
};

// A compressor whose spec and error feedback are fixed when it is built (every
// concrete one in compressors.h and powersgd.h).
class FixedSpecCompressor : public Compressor {
 public:
  FixedSpecCompressor(std::string spec, bool error_feedback) : spec_(std::move(spec)), ef_(error_feedback) {}
  const std::string& spec() const final { return spec_; }
  bool error_feedback() const final { return ef_; }

 private:
  std::string spec_;
  bool ef_;
};

// out += scale * update, without materializing a dense copy of it.
// InvalidArgument when out.size() != update.size().
inline Status AddTo(const Update& update, std::span<float> out, float scale = 1.0f) {
  return update.AddTo(out, scale);
}

// Builds a compressor from a spec such as "topk:0.01:fp16,ef" (grammar in
// docs/compression.md). InvalidArgument naming the spec when it is malformed.
Result<std::unique_ptr<Compressor>> MakeCompressor(std::string_view spec);

}  // namespace murmur::compression
