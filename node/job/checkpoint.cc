#include "node/job/checkpoint.h"

#include <zlib.h>

#include <algorithm>
#include <bit>
#include <cstdio>
#include <cstring>

#include "core/check.h"
#include "crypto/bytes.h"
#include "crypto/file_io.h"

namespace murmur::node {

namespace {
constexpr std::size_t kHeader = 24;

std::uint32_t Crc(std::span<const std::uint8_t> b) {
  uLong crc = crc32(0L, Z_NULL, 0);
  // zlib takes uInt lengths; feed in pieces.
  while (!b.empty()) {
    const std::size_t n = std::min<std::size_t>(b.size(), 1u << 30);
    crc = crc32(crc, b.data(), static_cast<uInt>(n));
    b = b.subspan(n);
  }
  return static_cast<std::uint32_t>(crc);
}

void AppendFloats(crypto::Bytes* out, const std::vector<float>& v) {
  for (float f : v) crypto::AppendU32(out, std::bit_cast<std::uint32_t>(f));
}

void AppendName(crypto::Bytes* out, const std::string& name) {
  crypto::AppendU32(out, static_cast<std::uint32_t>(name.size()));
  crypto::AppendBytes(out, crypto::AsBytes(name));
}

std::size_t MaxWide(std::size_t n) { return std::max(n, kMaxCheckpointWide); }

// The largest file a checkpoint of n parameters can be.
std::size_t MaxBytes(std::size_t n) {
  const std::size_t name = 4 + kMaxCheckpointName;
  return kHeader + 4 * n + name + 4 + kMaxCheckpointVectors * (name + 8 + 4 * n) + 4 +
         kMaxCheckpointScalars * (name + 8) + 4 + kMaxCheckpointVectors * (name + 8 + 8 * MaxWide(n)) + 4;
}

class Reader {
 public:
  explicit Reader(std::span<const std::uint8_t> b) : r_(b) {}
  bool U32(std::uint32_t* v) {
    crypto::ByteSpan s;
    if (!r_.ReadSpan(4, &s)) return false;
    *v = crypto::LoadU32(s.data());
    return true;
  }
  bool U64(std::uint64_t* v) { return r_.ReadU64(v); }
  // A name of `what`, 0..max bytes (1..max when !may_be_empty).
  Status Name(const char* what, bool may_be_empty, std::string* out) {
    std::uint32_t len = 0;
    crypto::ByteSpan s;
    if (!U32(&len)) return Truncated();
    if (len > kMaxCheckpointName || (len == 0 && !may_be_empty))
      return Status::InvalidArgument(std::string("checkpoint ") + what + " name of " + std::to_string(len) +
                                     " bytes (1.." + std::to_string(kMaxCheckpointName) + " allowed)");
    if (!r_.ReadSpan(len, &s)) return Truncated();
    out->assign(reinterpret_cast<const char*>(s.data()), s.size());
    return Status::Ok();
  }
  Status Floats(std::size_t n, std::vector<float>* out) {
    crypto::ByteSpan s;
    if (n > r_.remaining() / 4 || !r_.ReadSpan(4 * n, &s)) return Truncated();
    out->resize(n);
    std::memcpy(out->data(), s.data(), 4 * n);
    return Status::Ok();
  }
  Status Doubles(std::size_t n, std::vector<double>* out) {
    if (n > r_.remaining() / 8) return Truncated();
    out->resize(n);
    for (double& x : *out) {
      std::uint64_t bits = 0;
      if (!r_.ReadU64(&bits)) return Truncated();
      x = std::bit_cast<double>(bits);
    }
    return Status::Ok();
  }
  static Status Truncated() { return Status::DataLoss("checkpoint truncated"); }
  std::size_t remaining() const { return r_.remaining(); }

 private:
  crypto::ByteReader r_;
};
}  // namespace

std::vector<std::uint8_t> EncodeCheckpoint(const Checkpoint& c) {
  MURMUR_CHECK(c.algorithm.size() <= kMaxCheckpointName && c.job_id.size() <= kMaxCheckpointName &&
               c.vectors.size() <= kMaxCheckpointVectors && c.scalars.size() <= kMaxCheckpointScalars &&
               c.wide.size() <= kMaxCheckpointVectors);
  crypto::Bytes out;
  out.reserve(kHeader + 4 * c.params.size() * (1 + c.vectors.size()) + 64 * (c.vectors.size() + 2) + 4);
  crypto::AppendBytes(&out, crypto::AsBytes("MCKP"));
  crypto::AppendU32(&out, kCheckpointVersion);
  crypto::AppendU64(&out, c.round);
  crypto::AppendU64(&out, c.params.size());
  AppendFloats(&out, c.params);
  AppendName(&out, c.algorithm);
  AppendName(&out, c.job_id);
  crypto::AppendU64(&out, c.job_tag);
  crypto::AppendU32(&out, static_cast<std::uint32_t>(c.vectors.size()));
  for (const auto& [name, v] : c.vectors) {
    MURMUR_CHECK(!name.empty() && name.size() <= kMaxCheckpointName && v.size() == c.params.size());
    AppendName(&out, name);
    crypto::AppendU64(&out, v.size());
    AppendFloats(&out, v);
  }
  crypto::AppendU32(&out, static_cast<std::uint32_t>(c.scalars.size()));
  for (const auto& [name, x] : c.scalars) {
    MURMUR_CHECK(!name.empty() && name.size() <= kMaxCheckpointName);
    AppendName(&out, name);
    crypto::AppendU64(&out, std::bit_cast<std::uint64_t>(x));
  }
  crypto::AppendU32(&out, static_cast<std::uint32_t>(c.wide.size()));
  for (const auto& [name, v] : c.wide) {
    MURMUR_CHECK(!name.empty() && name.size() <= kMaxCheckpointName && v.size() <= MaxWide(c.params.size()));
    AppendName(&out, name);
    crypto::AppendU64(&out, v.size());
    for (double x : v) crypto::AppendU64(&out, std::bit_cast<std::uint64_t>(x));
  }
  crypto::AppendU32(&out, Crc(out));
  return out;
}

Result<Checkpoint> DecodeCheckpoint(std::span<const std::uint8_t> bytes, std::size_t expected_size) {
  if (bytes.size() < 8)
    return Status::DataLoss("checkpoint of " + std::to_string(bytes.size()) + " bytes is truncated");
  if (std::memcmp(bytes.data(), "MCKP", 4) != 0)
    return Status::InvalidArgument("not a murmur checkpoint (bad magic)");
  const std::uint32_t version = crypto::LoadU32(bytes.data() + 4);
  if (version == 1)
    return Status::InvalidArgument(
        "checkpoint version 1 holds only a model (murmurd before state checkpoints); this murmurd reads "
        "versions 2 to 4: remove the file to restart the job from round 0");
  if (version < 2 || version > kCheckpointVersion)
    return Status::InvalidArgument("checkpoint version " + std::to_string(version) + " is not 2 to " +
                                   std::to_string(kCheckpointVersion));
  if (bytes.size() < kHeader + 4)
    return Status::DataLoss("checkpoint of " + std::to_string(bytes.size()) + " bytes is truncated");
  // The CRC first: every later length is then trusted only within the file.
  const std::size_t body = bytes.size() - 4;
  if (crypto::LoadU32(bytes.data() + body) != Crc(bytes.first(body)))
    return Status::DataLoss("checkpoint CRC mismatch");
  Reader r(bytes.subspan(8, body - 8));
  Checkpoint c;
  std::uint64_t n = 0;
  if (!r.U64(&c.round) || !r.U64(&n)) return Reader::Truncated();
  if (n != expected_size)
    return Status::FailedPrecondition("checkpoint holds " + std::to_string(n) +
                                      " parameters, the model has " + std::to_string(expected_size));
  MURMUR_RETURN_IF_ERROR(r.Floats(n, &c.params));
  MURMUR_RETURN_IF_ERROR(r.Name("algorithm", true, &c.algorithm));
  if (version >= 4) {
    MURMUR_RETURN_IF_ERROR(r.Name("job id", true, &c.job_id));
    if (!r.U64(&c.job_tag)) return Reader::Truncated();
  }
  std::uint32_t count = 0;
  if (!r.U32(&count)) return Reader::Truncated();
  if (count > kMaxCheckpointVectors)
    return Status::InvalidArgument("checkpoint lists " + std::to_string(count) + " state vectors (at most " +
                                   std::to_string(kMaxCheckpointVectors) + ")");
  for (std::uint32_t k = 0; k < count; ++k) {
    std::string name;
    std::uint64_t m = 0;
    MURMUR_RETURN_IF_ERROR(r.Name("vector", false, &name));
    if (!r.U64(&m)) return Reader::Truncated();
    if (m != n)
      return Status::FailedPrecondition("checkpoint vector '" + name + "' has " + std::to_string(m) +
                                        " elements, the model has " + std::to_string(n));
    MURMUR_RETURN_IF_ERROR(r.Floats(m, &c.vectors[name]));
  }
  if (!r.U32(&count)) return Reader::Truncated();
  if (count > kMaxCheckpointScalars)
    return Status::InvalidArgument("checkpoint lists " + std::to_string(count) + " scalars (at most " +
                                   std::to_string(kMaxCheckpointScalars) + ")");
  for (std::uint32_t k = 0; k < count; ++k) {
    std::string name;
    std::uint64_t bits = 0;
    MURMUR_RETURN_IF_ERROR(r.Name("scalar", false, &name));
    if (!r.U64(&bits)) return Reader::Truncated();
    c.scalars[name] = std::bit_cast<double>(bits);
  }
  if (version >= 3) {
    if (!r.U32(&count)) return Reader::Truncated();
    if (count > kMaxCheckpointVectors)
      return Status::InvalidArgument("checkpoint lists " + std::to_string(count) + " wide vectors (at most " +
                                     std::to_string(kMaxCheckpointVectors) + ")");
    for (std::uint32_t k = 0; k < count; ++k) {
      std::string name;
      std::uint64_t m = 0;
      MURMUR_RETURN_IF_ERROR(r.Name("wide vector", false, &name));
      if (!r.U64(&m)) return Reader::Truncated();
      if (m > MaxWide(n))
        return Status::InvalidArgument("checkpoint wide vector '" + name + "' has " + std::to_string(m) +
                                       " elements (at most " + std::to_string(MaxWide(n)) + ")");
      MURMUR_RETURN_IF_ERROR(r.Doubles(m, &c.wide[name]));
    }
  }
  if (r.remaining() != 0)
    return Status::DataLoss("checkpoint has " + std::to_string(r.remaining()) +
                            " bytes after its last field");
  return c;
}

Status CheckCheckpointOwner(const Checkpoint& c, const std::string& path, const std::string& job_id,
                            std::uint64_t job_tag) {
  if (c.job_id.empty() && c.job_tag == 0) return Status::Ok();
  if (c.job_id == job_id && c.job_tag == job_tag) return Status::Ok();
  char tags[64];
  std::snprintf(tags, sizeof(tags), "tag %016llx, this job's %016llx",
                static_cast<unsigned long long>(c.job_tag), static_cast<unsigned long long>(job_tag));
  if (c.job_id != job_id)
    return Status::FailedPrecondition("checkpoint '" + path + "' belongs to job '" + c.job_id +
                                      "', not to job '" + job_id + "' (" + tags + ")");
  return Status::FailedPrecondition("checkpoint '" + path + "' belongs to job '" + job_id +
                                    "' as it was configured before (" + tags +
                                    "): the job's configuration changed; give the changed job a new job_id");
}

Status SaveCheckpoint(const std::string& path, const Checkpoint& c) {
  return crypto::WriteFileAtomic(path, EncodeCheckpoint(c), 0600);
}

Result<Checkpoint> LoadCheckpoint(const std::string& path, std::size_t expected_size) {
  MURMUR_ASSIGN_OR_RETURN(std::string text, crypto::ReadSmallFile(path, MaxBytes(expected_size)));
  auto c = DecodeCheckpoint(crypto::AsBytes(text), expected_size);
  if (!c.ok()) return c.status().WithContext("checkpoint '" + path + "'");
  return c;
}

}  // namespace murmur::node
