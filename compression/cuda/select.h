// Device selection for the GPU compressors (compression/cuda/gpu.h), and the
// per-thread scratch memory every kernel launcher of the module shares.
//
// Each selection takes the residual-or-input r and an optional x: with x,
// r += x first (fused into the first pass where the CPU fuses it) and the
// selection is on r; without, the selection is on r, which is only read.
// Results equal compression/select.h's on the same values: indices
// ascending, ties to the lowest index, the same Rng draws.
//
// Thread-safety: each thread has its own Scratch; launchers run on the
// stream they are given and return when their results are ready.
#pragma once

#include <cuda_runtime_api.h>

#include <array>
#include <cstddef>
#include <cstdint>

#include "core/rng.h"

namespace murmur::compression::cuda::detail {

enum class Slot : int {
  kHist,
  kCount,
  kCubTemp,
  kCandidates,
  kKeys,
  kKeysSorted,
  kIndexSorted,
  kPositions,
  kIndices,
  kValues,
  kPayload,
  kScales,
  kWork,
  kMix,
  kCount_
};

// Grow-only device and pinned host buffers, one per slot.
class Scratch {
 public:
  Scratch() = default;
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  ~Scratch();
  // At least `bytes` of device (or pinned host) memory for the slot; earlier
  // contents are lost when it grows.
  void* Device(Slot slot, std::size_t bytes);
  void* Host(Slot slot, std::size_t bytes);

 private:
  static constexpr std::size_t kSlots = static_cast<std::size_t>(Slot::kCount_);
  std::array<void*, kSlots> device_{};
  std::array<std::size_t, kSlots> device_cap_{};
  std::array<void*, kSlots> host_{};
  std::array<std::size_t, kSlots> host_cap_{};
};
Scratch& ThreadScratch();

// Every index i < n with AbsKey(a[i]) >= min_key, ascending, into out (room
// for all of them); returns their number.
std::size_t SelectAtLeast(const float* a, std::size_t n, std::uint32_t min_key, std::uint32_t* out,
                          cudaStream_t stream);
// The k largest keys of a among the c candidates (ascending indices), ties to the lowest index.
void FinishTopK(const float* a, std::size_t n, const std::uint32_t* cand, std::size_t c, std::size_t k,
                std::uint32_t* out, cudaStream_t stream);
// TopKExact(Accumulate) of compression/select.h: min(k, n) indices into out.
void TopKExact(float* r, const float* x, std::size_t n, std::size_t k, std::uint32_t* out,
               cudaStream_t stream);
// TopKApprox(Accumulate): returns the count written to out (room for max(k, 1.3 k + 1)).
std::size_t TopKApprox(float* r, const float* x, std::size_t n, std::size_t k, Rng& rng, std::uint32_t* out,
                       cudaStream_t stream);
// ThresholdSelect(Accumulate): out needs room for n.
std::size_t Threshold(float* r, const float* x, std::size_t n, float tau, std::uint32_t* out,
                      cudaStream_t stream);

}  // namespace murmur::compression::cuda::detail
