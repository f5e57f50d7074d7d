#include "compression/update.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <string>
#include <unordered_set>

#include "compression/wire_io.h"
#include "core/gemm.h"
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
        // out += (scale P) Q^T, each output's chain starting from out (docs/protocol.md).
        RowMatrixXf scaled_p = scale * Eigen::Map<const RowMatrixXf>(f, s.rows, s.rank);
        const MatrixView q =
            MatrixView::RowMajor(f + static_cast<std::size_t>(s.rows) * s.rank, s.cols, s.rank);
        Gemm(MatrixView::RowMajor(scaled_p.data(), s.rows, s.rank), q.T(), o, s.cols, GemmMode::kAdd);
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

// Update::Decode: the validating reader of the wire format (docs/compression.md).
// Every count is checked against the limits and against the bytes that remain
// before it sizes an allocation.

using internal::ByteReader;

namespace {
std::string S(std::uint64_t v) { return std::to_string(v); }

Status Truncated(const char* what) { return Status::DataLoss(std::string("update truncated in ") + what); }

bool FiniteBits32(std::uint32_t u) { return (u & 0x7F800000) != 0x7F800000; }

// Reads `count` values of coding `c`; the caller has checked count against its limit.
Status ReadValues(ByteReader& in, const ValueCoding& c, std::size_t count, PackedValues* out) {
  const std::size_t nscales = c.NumScales(count), nbytes = c.PayloadBytes(count);
  if (in.remaining() < 4 * nscales + nbytes)
    return Status::DataLoss("update truncated: " + S(count) + " " + ValueTypeName(c.type) + " values need " +
                            S(4 * nscales + nbytes) + " bytes, " + S(in.remaining()) + " remain");
  std::span<const std::uint8_t> raw;
  out->coding = c;
  out->count = count;
  (void)in.ReadSpan(4 * nscales, &raw);
  out->scales.resize(nscales);
  if (nscales) std::memcpy(out->scales.data(), raw.data(), raw.size());
  for (std::size_t i = 0; i < nscales; ++i)
    if (!std::isfinite(out->scales[i]) || out->scales[i] < 0)
      return Status::InvalidArgument("bad scale " + S(i) + ": not a finite non-negative number");
  (void)in.ReadSpan(nbytes, &raw);
  out->payload.assign(raw.begin(), raw.end());
  const std::uint8_t* p = out->payload.data();
  switch (c.type) {
    case ValueType::kF32:
      for (std::size_t i = 0; i < count; ++i) {
        std::uint32_t u;
        std::memcpy(&u, p + 4 * i, 4);
        if (!FiniteBits32(u)) return Status::InvalidArgument("value " + S(i) + " is not finite");
      }
      return Status::Ok();
    case ValueType::kF16:
    case ValueType::kBF16: {
      const std::uint16_t exp_mask = c.type == ValueType::kF16 ? 0x7C00 : 0x7F80;
      for (std::size_t i = 0; i < count; ++i) {
        std::uint16_t h = static_cast<std::uint16_t>(p[2 * i] | (p[2 * i + 1] << 8));
        if ((h & exp_mask) == exp_mask) return Status::InvalidArgument("value " + S(i) + " is not finite");
      }
      return Status::Ok();
    }
    case ValueType::kInt8:
      for (std::size_t i = 0; i < count; ++i)
        if (p[i] == 0x80)
          return Status::InvalidArgument("int8 value " + S(i) + " is -128, outside [-127, 127]");
      return Status::Ok();
    default: break;
  }
  const int bits = c.BitsPerValue();
  for (std::size_t i = 0; i < count; ++i) {
    std::size_t bit = i * static_cast<std::size_t>(bits);
    std::uint32_t w = 0;
    for (std::size_t k = 0; k < (bit % 8 + static_cast<std::size_t>(bits) + 7) / 8; ++k)
      w |= static_cast<std::uint32_t>(p[bit / 8 + k]) << (8 * k);
    std::uint32_t field = (w >> (bit % 8)) & ((1u << bits) - 1);
    if (c.type == ValueType::kTernary && field == 3)
      return Status::InvalidArgument("ternary value " + S(i) + " has the unused code 3");
    if (c.type == ValueType::kQsgd && (field >> 1) > c.levels)
      return Status::InvalidArgument("qsgd value " + S(i) + " has level " + S(field >> 1) +
                                     " over s = " + S(c.levels));
  }
  std::size_t used = count * static_cast<std::size_t>(bits);
  if (used % 8 && (p[nbytes - 1] >> (used % 8)) != 0)
    return Status::DataLoss("value payload overrun: padding bits after value " + S(count) + " are set");
  return Status::Ok();
}

Status ReadIndices(ByteReader& in, std::size_t n, std::vector<std::uint32_t>* out) {
  std::uint8_t coding;
  std::uint64_t k;
  if (!in.ReadU8(&coding)) return Truncated("index coding");
  if (!in.ReadVarint(&k)) return Truncated("index count");
  if (k > n) return Status::ResourceExhausted("index count " + S(k) + " over element count " + S(n));
  if (coding == static_cast<std::uint8_t>(IndexCoding::kDeltaVarint)) {
    if (k > in.remaining())
      return Status::DataLoss("update truncated: " + S(k) + " varint indices, " + S(in.remaining()) +
                              " bytes remain");
    out->reserve(k);
    std::uint64_t prev = 0;
    for (std::uint64_t i = 0; i < k; ++i) {
      std::uint64_t d;
      if (!in.ReadVarint(&d)) return Status::DataLoss("varint overrun in index " + S(i));
      if (i > 0 && d == 0) return Status::InvalidArgument("index " + S(i) + " is not strictly increasing");
      if (d >= n || (i > 0 && prev + d >= n))
        return Status::OutOfRange("index " + S(i) + " out of bounds for " + S(n) + " elements");
      prev = i == 0 ? d : prev + d;
      out->push_back(static_cast<std::uint32_t>(prev));
    }
    return Status::Ok();
  }
  if (coding != static_cast<std::uint8_t>(IndexCoding::kBitmap))
    return Status::InvalidArgument("unknown index coding byte " + S(coding));
  std::span<const std::uint8_t> bitmap;
  if (!in.ReadSpan((n + 7) / 8, &bitmap)) return Truncated("index bitmap");
  std::uint64_t set = 0;
  for (std::uint8_t b : bitmap) set += static_cast<std::uint64_t>(std::popcount(b));
  if (n % 8 && (bitmap.back() >> (n % 8)) != 0)
    return Status::DataLoss("bitmap overrun: bits set past element " + S(n));
  if (set != k) return Status::DataLoss("bitmap has " + S(set) + " bits set but the count says " + S(k));
  out->reserve(k);
  for (std::size_t byte = 0; byte < bitmap.size(); ++byte)
    for (unsigned b = bitmap[byte]; b; b &= b - 1)
      out->push_back(static_cast<std::uint32_t>(8 * byte + static_cast<std::size_t>(std::countr_zero(b))));
  return Status::Ok();
}

Status ReadLowRank(ByteReader& in, std::size_t n, const DecodeLimits& limits,
                   std::vector<LowRankSegment>* segments, std::vector<float>* factors) {
  std::uint64_t count;
  if (!in.ReadVarint(&count)) return Truncated("segment count");
  if (count > limits.max_segments)
    return Status::ResourceExhausted("segment count " + S(count) + " over limit " + S(limits.max_segments));
  std::uint64_t end = 0;
  for (std::uint64_t i = 0; i < count; ++i) {
    std::uint8_t kind;
    std::uint64_t offset, rows, cols = 1, rank = 0;
    if (!in.ReadU8(&kind) || !in.ReadVarint(&offset) || !in.ReadVarint(&rows)) return Truncated("segment");
    if (kind > 1) return Status::InvalidArgument("segment " + S(i) + " has unknown kind " + S(kind));
    if (kind == 1 && (!in.ReadVarint(&cols) || !in.ReadVarint(&rank))) return Truncated("segment");
    if (rows == 0 || cols == 0 || rows > n || cols > n ||
        (kind == 1 && (rank == 0 || rank > std::min(rows, cols))))
      return Status::InvalidArgument("segment " + S(i) + " has bad shape " + S(rows) + "x" + S(cols) +
                                     " rank " + S(rank));
    if (offset < end) return Status::InvalidArgument("segment " + S(i) + " overlaps the one before");
    if (offset > n || rows * cols > n - offset)
      return Status::OutOfRange("segment " + S(i) + " out of bounds for " + S(n) + " elements");
    LowRankSegment s{static_cast<std::uint32_t>(offset), static_cast<std::uint32_t>(rows),
                     static_cast<std::uint32_t>(cols), static_cast<std::uint32_t>(rank), factors->size()};
    std::span<const std::uint8_t> raw;
    if (in.remaining() / 4 < s.num_floats() || !in.ReadSpan(4 * s.num_floats(), &raw))
      return Truncated("segment data");
    for (std::size_t j = 0; j < s.num_floats(); ++j) {
      std::uint32_t u;
      std::memcpy(&u, raw.data() + 4 * j, 4);
      if (!FiniteBits32(u))
        return Status::InvalidArgument("segment " + S(i) + " value " + S(j) + " is not finite");
      factors->push_back(std::bit_cast<float>(u));
    }
    segments->push_back(s);
    end = offset + rows * cols;
  }
  return Status::Ok();
}
}  // namespace

Result<Update> Update::Decode(std::span<const std::uint8_t> bytes, const DecodeLimits& limits) {
  ByteReader in(bytes);
  std::uint8_t version, format, type;
  if (!in.ReadU8(&version) || !in.ReadU8(&format) || !in.ReadU8(&type)) return Truncated("header");
  if (version != kWireVersion) return Status::InvalidArgument("unsupported wire version " + S(version));
  if (format > static_cast<std::uint8_t>(UpdateFormat::kLowRank))
    return Status::InvalidArgument("unknown format byte " + S(format));
  if (type > kMaxValueType) return Status::InvalidArgument("unknown value type byte " + S(type));
  ValueCoding c;
  c.type = static_cast<ValueType>(type);
  std::uint64_t param;
  if (c.type == ValueType::kInt8) {
    if (!in.ReadVarint(&param)) return Truncated("int8 block size");
    if (param == 0 || param > kMaxInt8Block)
      return Status::InvalidArgument("bad int8 block size " + S(param));
    c.block = static_cast<std::uint32_t>(param);
  }
  if (c.type == ValueType::kQsgd) {
    if (!in.ReadVarint(&param)) return Truncated("qsgd levels");
    if (param == 0 || param > kMaxQsgdLevels)
      return Status::InvalidArgument("bad qsgd level count " + S(param));
    c.levels = static_cast<std::uint32_t>(param);
  }
  std::uint64_t n;
  if (!in.ReadVarint(&n)) return Truncated("element count");
  const std::uint64_t max_n = std::min<std::uint64_t>(limits.max_elements, 0xFFFFFFFFu);
  if (n > max_n) return Status::ResourceExhausted("element count " + S(n) + " over limit " + S(max_n));

  Update u;
  u.format_ = static_cast<UpdateFormat>(format);
  u.n_ = n;
  switch (u.format_) {
    case UpdateFormat::kDense: MURMUR_RETURN_IF_ERROR(ReadValues(in, c, n, &u.values_)); break;
    case UpdateFormat::kSparse:
      MURMUR_RETURN_IF_ERROR(ReadIndices(in, n, &u.indices_));
      MURMUR_RETURN_IF_ERROR(ReadValues(in, c, u.indices_.size(), &u.values_));
      break;
    case UpdateFormat::kRandomK: {
      std::uint64_t k;
      if (!in.ReadVarint(&k)) return Truncated("value count");
      if (k > n) return Status::ResourceExhausted("value count " + S(k) + " over element count " + S(n));
      if (!in.ReadU64(&u.key_.seed) || !in.ReadVarint(&u.key_.round) || !in.ReadVarint(&u.key_.sender))
        return Truncated("random-k key");
      MURMUR_RETURN_IF_ERROR(ReadValues(in, c, k, &u.values_));
      u.indices_ = RandomKIndices(n, k, u.key_);  // k is backed by received bytes
      break;
    }
    case UpdateFormat::kLowRank:
      if (c.type != ValueType::kF32) return Status::InvalidArgument("low-rank update with non-fp32 values");
      MURMUR_RETURN_IF_ERROR(ReadLowRank(in, n, limits, &u.segments_, &u.factors_));
      u.values_.coding = c;
      break;
  }
  if (in.remaining() != 0)
    return Status::InvalidArgument(S(in.remaining()) + " trailing bytes after the update");
  u.ComputeSize();
  return u;
}

}  // namespace murmur::compression
