#include "compression/update.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <string>
#include <unordered_set>

#include "compression/wire_io.h"
#include "core/param_vector.h"
#include "core/rng.h"

namespace murmur::compression {

using internal::ByteReader;
using internal::PutBytes;
using internal::PutU64;
using internal::PutVarint;
using internal::VarintSize;

Update Update::Dense(std::size_t n, PackedValues values) {
  MURMUR_CHECK(values.count == n);
  Update u;
  u.format_ = UpdateFormat::kDense;
  u.n_ = n;
  u.values_ = std::move(values);
  u.ComputeSize();
  return u;
}

Update Update::Sparse(std::size_t n, std::vector<std::uint32_t> indices, PackedValues values) {
  MURMUR_CHECK(values.count == indices.size());
  for (std::size_t i = 0; i < indices.size(); ++i)
    MURMUR_CHECK(indices[i] < n && (i == 0 || indices[i] > indices[i - 1]));
  Update u;
  u.format_ = UpdateFormat::kSparse;
  u.n_ = n;
  u.indices_ = std::move(indices);
  u.values_ = std::move(values);
  u.ComputeSize();
  return u;
}

Update Update::RandomK(std::size_t n, RandomKKey key, PackedValues values) {
  MURMUR_CHECK(values.count <= n);
  Update u;
  u.format_ = UpdateFormat::kRandomK;
  u.n_ = n;
  u.key_ = key;
  u.indices_ = RandomKIndices(n, values.count, key);
  u.values_ = std::move(values);
  u.ComputeSize();
  return u;
}

Update Update::LowRank(std::size_t n, std::vector<LowRankSegment> segments, std::vector<float> factors) {
  std::size_t end = 0, data = 0;
  for (const LowRankSegment& s : segments) {
    MURMUR_CHECK(s.offset >= end && s.offset + s.length() <= n && s.data == data);
    MURMUR_CHECK(s.rank == 0 ? s.cols == 1 : s.rank <= std::min(s.rows, s.cols));
    end = s.offset + s.length();
    data += s.num_floats();
  }
  MURMUR_CHECK(data == factors.size());
  Update u;
  u.format_ = UpdateFormat::kLowRank;
  u.n_ = n;
  u.segments_ = std::move(segments);
  u.factors_ = std::move(factors);
  u.values_.coding.type = ValueType::kF32;
  u.ComputeSize();
  return u;
}

Update Update::SharedDenseF32(std::shared_ptr<const float> values, std::size_t n) {
  MURMUR_CHECK(values != nullptr && n > 0);
  Update u;
  u.format_ = UpdateFormat::kDense;
  u.n_ = n;
  u.values_.coding.type = ValueType::kF32;
  u.values_.count = n;
  u.shared_ = std::move(values);
  u.ComputeSize();
  return u;
}

void Update::ComputeSize() {
  const ValueCoding& c = values_.coding;
  std::size_t size = 3 + VarintSize(n_);
  if (c.type == ValueType::kInt8) size += VarintSize(c.block);
  if (c.type == ValueType::kQsgd) size += VarintSize(c.levels);
  switch (format_) {
    case UpdateFormat::kDense: size += c.EncodedBytes(n_); break;
    case UpdateFormat::kSparse: {
      varint_bytes_ = 0;
      for (std::size_t i = 0; i < indices_.size(); ++i)
        varint_bytes_ += VarintSize(i == 0 ? indices_[0] : indices_[i] - indices_[i - 1]);
      std::size_t bitmap = (n_ + 7) / 8;
      index_coding_ = bitmap < varint_bytes_ ? IndexCoding::kBitmap : IndexCoding::kDeltaVarint;
      size +=
          1 + VarintSize(indices_.size()) + std::min(bitmap, varint_bytes_) + c.EncodedBytes(indices_.size());
      break;
    }
    case UpdateFormat::kRandomK:
      size += VarintSize(values_.count) + 8 + VarintSize(key_.round) + VarintSize(key_.sender) +
              c.EncodedBytes(values_.count);
      break;
    case UpdateFormat::kLowRank:
      size += VarintSize(segments_.size());
      for (const LowRankSegment& s : segments_) {
        size += 1 + VarintSize(s.offset) + VarintSize(s.rows);
        if (s.rank > 0) size += VarintSize(s.cols) + VarintSize(s.rank);
        size += 4 * s.num_floats();
      }
      break;
  }
  encoded_size_ = size;
}

namespace {
void PutValues(std::vector<std::uint8_t>& out, const PackedValues& v) {
  PutBytes(out, v.scales.data(), 4 * v.scales.size());
  PutBytes(out, v.payload.data(), v.payload.size());
}
}  // namespace

void Update::Encode(std::vector<std::uint8_t>& out) const {
  static_assert(std::endian::native == std::endian::little, "the wire format is little-endian");
  const std::size_t start = out.size();
  out.reserve(start + encoded_size_);
  const ValueCoding& c = values_.coding;
  out.push_back(kWireVersion);
  out.push_back(static_cast<std::uint8_t>(format_));
  out.push_back(static_cast<std::uint8_t>(c.type));
  if (c.type == ValueType::kInt8) PutVarint(out, c.block);
  if (c.type == ValueType::kQsgd) PutVarint(out, c.levels);
  PutVarint(out, n_);
  switch (format_) {
    case UpdateFormat::kDense:
      if (shared_ != nullptr) {
        PutBytes(out, shared_.get(), 4 * n_);
      } else {
        PutValues(out, values_);
      }
      break;
    case UpdateFormat::kSparse:
      out.push_back(static_cast<std::uint8_t>(index_coding_));
      PutVarint(out, indices_.size());
      if (index_coding_ == IndexCoding::kDeltaVarint) {
        for (std::size_t i = 0; i < indices_.size(); ++i)
          PutVarint(out, i == 0 ? indices_[0] : indices_[i] - indices_[i - 1]);
      } else {
        std::size_t base = out.size();
        out.resize(base + (n_ + 7) / 8, 0);
        for (std::uint32_t i : indices_) out[base + i / 8] |= static_cast<std::uint8_t>(1u << (i % 8));
      }
      PutValues(out, values_);
      break;
    case UpdateFormat::kRandomK:
      PutVarint(out, values_.count);
      PutU64(out, key_.seed);
      PutVarint(out, key_.round);
      PutVarint(out, key_.sender);
      PutValues(out, values_);
      break;
    case UpdateFormat::kLowRank:
      PutVarint(out, segments_.size());
      for (const LowRankSegment& s : segments_) {
        out.push_back(s.rank == 0 ? 0 : 1);
        PutVarint(out, s.offset);
        PutVarint(out, s.rows);
        if (s.rank > 0) {
          PutVarint(out, s.cols);
          PutVarint(out, s.rank);
        }
        PutBytes(out, factors_.data() + s.data, 4 * s.num_floats());
      }
      break;
  }
  MURMUR_CHECK(out.size() - start == encoded_size_);
}

Status Update::AddTo(std::span<float> out, float scale) const {
  if (out.size() != n_)
    return Status::InvalidArgument("update of " + std::to_string(n_) + " elements added to a vector of " +
                                   std::to_string(out.size()));
  switch (format_) {
    case UpdateFormat::kDense:
      if (shared_ != nullptr) {
        const float* v = shared_.get();
        for (std::size_t i = 0; i < n_; ++i) out[i] += scale * v[i];
      } else {
        values_.AddTo(out, scale);
      }
      break;
    case UpdateFormat::kSparse:
    case UpdateFormat::kRandomK: values_.ScatterAddTo(indices_, out, scale); break;
    case UpdateFormat::kLowRank:
      for (const LowRankSegment& s : segments_) {
        const float* f = factors_.data() + s.data;
        float* o = out.data() + s.offset;
        if (s.rank == 0) {
          for (std::uint32_t i = 0; i < s.rows; ++i) o[i] += scale * f[i];
          continue;
        }
        Eigen::Map<const RowMatrixXf> p(f, s.rows, s.rank);
        Eigen::Map<const RowMatrixXf> q(f + static_cast<std::size_t>(s.rows) * s.rank, s.cols, s.rank);
        Eigen::Map<RowMatrixXf> m(o, s.rows, s.cols);
        m.noalias() += scale * (p * q.transpose());
      }
      break;
  }
  return Status::Ok();
}

std::vector<float> Update::ToDense() const {
  std::vector<float> out(n_, 0.0f);
  MURMUR_CHECK(AddTo(out, 1.0f).ok());
  return out;
}

bool operator==(const Update& a, const Update& b) {
  if (a.shared_ != nullptr || b.shared_ != nullptr) {
    // A shared dense fp32 update equals the copied one with the same bytes.
    const float* x = a.dense_f32();
    const float* y = b.dense_f32();
    return x != nullptr && y != nullptr && a.n_ == b.n_ && std::memcmp(x, y, 4 * a.n_) == 0;
  }
  return a.format_ == b.format_ && a.n_ == b.n_ && a.indices_ == b.indices_ && a.values_ == b.values_ &&
         a.key_ == b.key_ && a.segments_ == b.segments_ && a.factors_ == b.factors_;
}

std::vector<std::uint32_t> RandomKIndices(std::size_t n, std::size_t k, const RandomKKey& key) {
  MURMUR_CHECK(k <= n);
  std::vector<std::uint32_t> out;
  if (k == 0) return out;
  Rng rng = Rng(key.seed, 0, RngPurpose::kCompression).Fork(key.round).Fork(key.sender);
  out.reserve(k);
  // Floyd: for j = n-k .. n-1, draw t in [0, j]; take t unless taken, else j.
  // The chosen set depends only on the draws, whichever set structure is used.
  if (k * 64 < n) {
    std::unordered_set<std::uint32_t> taken;
    taken.reserve(2 * k);
    for (std::size_t j = n - k; j < n; ++j) {
      auto t = static_cast<std::uint32_t>(rng.UniformInt(j + 1));
      if (!taken.insert(t).second) taken.insert(static_cast<std::uint32_t>(j));
    }
    out.assign(taken.begin(), taken.end());
    std::sort(out.begin(), out.end());
    return out;
  }
  std::vector<std::uint64_t> bits((n + 63) / 64, 0);
  for (std::size_t j = n - k; j < n; ++j) {
    std::uint64_t t = rng.UniformInt(j + 1);
    std::uint64_t pick = (bits[t / 64] >> (t % 64)) & 1 ? j : t;
    bits[pick / 64] |= std::uint64_t{1} << (pick % 64);
  }
  for (std::size_t w = 0; w < bits.size(); ++w)
    for (std::uint64_t b = bits[w]; b; b &= b - 1)
      out.push_back(static_cast<std::uint32_t>(64 * w + static_cast<std::size_t>(std::countr_zero(b))));
  return out;
}

std::shared_ptr<const Update> DenseF32Update(std::span<const float> v) {
  return std::make_shared<const Update>(Update::Dense(v.size(), PackValues(v, {}, ValueCoding{}, 0)));
}

}  // namespace murmur::compression
