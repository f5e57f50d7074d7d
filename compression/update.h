// Update: one compressed model update, exactly as it travels.
//
// An Update is an immutable value: built once by a Compressor (or by Decode
// from bytes received), then shared read-only between any number of receivers
// (std::shared_ptr<const Update> in the simulator). It holds the format, the
// element count n of the model vector, the indices (sorted, strictly
// increasing) for the sparse formats, the values in their wire coding, and for
// low-rank updates the factor matrices. EncodedSize() is exactly the number of
// bytes Encode() appends; the layout is specified in docs/compression.md.
//
// Decode() treats its input as hostile: every count is checked against
// DecodeLimits and against the bytes that remain before anything is
// allocated, and any malformed input yields a Status, never an abort.
//
// Thread-safety: const methods are safe to call concurrently.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "compression/values.h"
#include "core/check.h"
#include "core/status.h"

namespace murmur::compression {

inline constexpr std::uint8_t kWireVersion = 1;

enum class UpdateFormat : std::uint8_t {
  kDense = 0,    // n values
  kSparse = 1,   // k sorted indices (delta varints or bitmap) + k values
  kRandomK = 2,  // k values; the indices are regenerated from (seed, round, sender)
  kLowRank = 3,  // segments: dense fp32 runs and rank-r factors P (rows x r), Q (cols x r)
};

enum class IndexCoding : std::uint8_t { kDeltaVarint = 0, kBitmap = 1 };

struct DecodeLimits {
  std::uint64_t max_elements = std::uint64_t{1} << 30;  // n, the model size
  std::uint64_t max_segments = 1 << 16;                 // low-rank segments
};

// One piece of a low-rank update, covering elements [offset, offset + rows * cols)
// (rank > 0: P Q^T, row-major rows x cols) or [offset, offset + rows) (rank == 0: dense run).
struct LowRankSegment {
  std::uint32_t offset = 0;
  std::uint32_t rows = 0;
  std::uint32_t cols = 0;  // 1 for a dense run
  std::uint32_t rank = 0;
  std::size_t data = 0;  // first float of this segment in factors(): P then Q, or the run
  std::size_t length() const { return static_cast<std::size_t>(rows) * cols; }
  std::size_t num_floats() const { return rank == 0 ? rows : (static_cast<std::size_t>(rows) + cols) * rank; }
  friend bool operator==(const LowRankSegment&, const LowRankSegment&) = default;
};

// Keys the random-k index set: a pure function of these three numbers.
struct RandomKKey {
  std::uint64_t seed = 0;
  std::uint64_t round = 0;
  std::uint64_t sender = 0;
  friend bool operator==(const RandomKKey&, const RandomKKey&) = default;
};

class Update {
 public:
  // REQUIRES for every builder: sizes consistent (values.count == n or indices.size()).
  static Update Dense(std::size_t n, PackedValues values);
  // REQUIRES: indices strictly increasing and < n.
  static Update Sparse(std::size_t n, std::vector<std::uint32_t> indices, PackedValues values);
  // The indices are RandomKIndices(n, values.count, key).
  static Update RandomK(std::size_t n, RandomKKey key, PackedValues values);
  // REQUIRES: segments ordered, non-overlapping, within n; data offsets consecutive.
  static Update LowRank(std::size_t n, std::vector<LowRankSegment> segments, std::vector<float> factors);
  // The lossless dense fp32 update of the n floats at `values`, which it
  // shares rather than copies: the update keeps their owner alive, and
  // dense_f32() points at them. It encodes, decodes and compares exactly like
  // Dense(n, fp32 values) but holds nothing in values() beyond coding and
  // count. A gossip node sends its model this way. REQUIRES: nobody writes
  // those floats while the update (or a copy of the pointer) exists.
  static Update SharedDenseF32(std::shared_ptr<const float> values, std::size_t n);

  UpdateFormat format() const { return format_; }
  std::size_t size() const { return n_; }  // elements of the model vector
  // Indices of the values (sparse and random-k); empty otherwise.
  std::span<const std::uint32_t> indices() const { return indices_; }
  // REQUIRES: not a SharedDenseF32 update (its values are at dense_f32()).
  const PackedValues& values() const {
    MURMUR_CHECK(shared_ == nullptr);
    return values_;
  }
  // The n values of a dense fp32 update, in place (no copy); null for any
  // other format or coding. For receivers that fuse several updates in one pass.
  const float* dense_f32() const {
    if (shared_ != nullptr) return shared_.get();
    return format_ == UpdateFormat::kDense && values_.coding.type == ValueType::kF32 && n_ > 0
               ? reinterpret_cast<const float*>(values_.payload.data())
               : nullptr;
  }
  const RandomKKey& random_k_key() const { return key_; }
  const std::vector<LowRankSegment>& segments() const { return segments_; }
  std::span<const float> factors() const { return factors_; }
  // Index coding Encode uses: the smaller of delta varints and bitmap (varints on a tie).
  IndexCoding index_coding() const { return index_coding_; }

  // Exactly the number of bytes Encode appends.
  std::size_t EncodedSize() const { return encoded_size_; }
  // Appends the wire encoding to `out`.
  void Encode(std::vector<std::uint8_t>& out) const;
  static Result<Update> Decode(std::span<const std::uint8_t> bytes, const DecodeLimits& limits = {});

  // out += scale * this update. InvalidArgument when out.size() != size().
  Status AddTo(std::span<float> out, float scale = 1.0f) const;
  // The dense vector this update stands for (for tests and tools; receivers use AddTo).
  std::vector<float> ToDense() const;

  friend bool operator==(const Update&, const Update&);

 private:
  Update() = default;
  void ComputeSize();

  UpdateFormat format_ = UpdateFormat::kDense;
  std::size_t n_ = 0;
  std::vector<std::uint32_t> indices_;
  PackedValues values_;
  RandomKKey key_;
  std::vector<LowRankSegment> segments_;
  std::vector<float> factors_;
  std::shared_ptr<const float> shared_;  // SharedDenseF32: the values, owned elsewhere
  IndexCoding index_coding_ = IndexCoding::kDeltaVarint;
  std::size_t varint_bytes_ = 0;
  std::size_t encoded_size_ = 0;
};

// The lossless dense update of `v` (fp32 values, no compressor state), shared.
std::shared_ptr<const Update> DenseF32Update(std::span<const float> v);

// k distinct indices in [0, n), sorted, drawn from a stream keyed by `key`
// (Floyd's algorithm, Bentley & Floyd 1987, over a bitmap). REQUIRES: k <= n.
// O(k + n / 64) time, n / 8 bytes of scratch.
std::vector<std::uint32_t> RandomKIndices(std::size_t n, std::size_t k, const RandomKKey& key);

}  // namespace murmur::compression
