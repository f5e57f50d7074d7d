#include "node/artifacts/artifact.h"

#include <cstdio>
#include <fstream>

#include "crypto/hmac.h"

namespace murmur::node {

namespace {
std::string Hex(const crypto::Bytes& b) { return crypto::ToHex(b); }

std::string SizeText(std::uint64_t bytes) {
  char buf[64];
  if (bytes >= 1000000000)
    std::snprintf(buf, sizeof buf, "%.2f GB", bytes / 1e9);
  else if (bytes >= 1000000)
    std::snprintf(buf, sizeof buf, "%.1f MB", bytes / 1e6);
  else
    std::snprintf(buf, sizeof buf, "%llu bytes", static_cast<unsigned long long>(bytes));
  return buf;
}
}  // namespace

ArtifactManifest ManifestOf(const proto::ArtifactOffer& offer) {
  return ArtifactManifest{offer.artifact(), {offer.chunk_digests().begin(), offer.chunk_digests().end()}};
}

proto::ArtifactOffer OfferOf(const ArtifactManifest& m) {
  proto::ArtifactOffer offer;
  *offer.mutable_artifact() = m.artifact;
  for (const std::string& d : m.digests) offer.add_chunk_digests(d);
  return offer;
}

std::string ChunkDigest(crypto::ByteSpan chunk) {
  crypto::Blake2bHasher h(kChunkDigestBytes);
  h.Update(chunk);
  const crypto::Bytes d = h.Final();
  return std::string(d.begin(), d.end());
}

std::string DigestsBlake2b(const std::vector<std::string>& digests) {
  crypto::Blake2bHasher h;
  for (const std::string& d : digests) h.Update(crypto::AsBytes(d));
  return Hex(h.Final());
}

Result<ArtifactManifest> DescribeArtifactFile(const std::string& path, const std::string& name,
                                              std::uint32_t chunk_bytes) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::NotFound("cannot open '" + path + "'");
  ArtifactManifest m;
  crypto::Blake2bHasher whole;
  std::vector<std::uint8_t> buf(chunk_bytes);
  std::uint64_t total = 0;
  while (true) {
    in.read(reinterpret_cast<char*>(buf.data()), static_cast<std::streamsize>(buf.size()));
    const auto got = static_cast<std::size_t>(in.gcount());
    if (got > 0) {
      const crypto::ByteSpan piece(buf.data(), got);
      whole.Update(piece);
      m.digests.push_back(ChunkDigest(piece));
      total += got;
    }
    if (got < buf.size()) break;
  }
  if (in.bad()) return Status::DataLoss("reading '" + path + "' failed");
  m.artifact.set_name(name);
  m.artifact.set_blake2b(Hex(whole.Final()));
  m.artifact.set_bytes(total);
  m.artifact.set_chunk_bytes(chunk_bytes);
  m.artifact.set_chunks_blake2b(DigestsBlake2b(m.digests));
  return m;
}

std::uint64_t ChunkCount(const proto::Artifact& a) {
  return (a.bytes() + a.chunk_bytes() - 1) / a.chunk_bytes();
}

std::uint64_t ChunkSize(const proto::Artifact& a, std::uint64_t index) {
  const std::uint64_t start = index * a.chunk_bytes();
  return std::min<std::uint64_t>(a.chunk_bytes(), a.bytes() - start);
}

bool IsBlake2bHex(const std::string& s) {
  return s.size() == 2 * crypto::kHashLen && s.find_first_not_of("0123456789abcdef") == std::string::npos;
}

Status CheckArtifact(const proto::Artifact& a) {
  const std::string what = "artifact '" + a.name().substr(0, 64) + "': ";
  if (a.name().size() > 255) return Status::InvalidArgument(what + "name is over 255 bytes");
  if (!IsBlake2bHex(a.blake2b()))
    return Status::InvalidArgument(what + "field 'blake2b' must be 128 lowercase hex digits");
  if (!IsBlake2bHex(a.chunks_blake2b()))
    return Status::InvalidArgument(what + "field 'chunks_blake2b' must be 128 lowercase hex digits");
  if (a.chunk_bytes() < kMinArtifactChunkBytes || a.chunk_bytes() > kMaxArtifactChunkBytes)
    return Status::InvalidArgument(what + "field 'chunk_bytes' is " + std::to_string(a.chunk_bytes()) +
                                   ", outside [" + std::to_string(kMinArtifactChunkBytes) + ", " +
                                   std::to_string(kMaxArtifactChunkBytes) + "]");
  if (a.bytes() > (std::uint64_t{1} << 50))
    return Status::InvalidArgument(what + "field 'bytes' is over 2^50");
  return Status::Ok();
}

Status CheckManifest(const ArtifactManifest& m) {
  MURMUR_RETURN_IF_ERROR(CheckArtifact(m.artifact));
  const proto::Artifact& a = m.artifact;
  if (m.digests.size() != ChunkCount(a))
    return Status::InvalidArgument("artifact " + DescribeArtifact(a) + ": " +
                                   std::to_string(m.digests.size()) + " chunk digests for " +
                                   std::to_string(ChunkCount(a)) + " chunks");
  for (const std::string& d : m.digests)
    if (d.size() != kChunkDigestBytes)
      return Status::InvalidArgument("artifact " + DescribeArtifact(a) + ": a chunk digest of " +
                                     std::to_string(d.size()) + " bytes, not " +
                                     std::to_string(kChunkDigestBytes));
  const std::string root = DigestsBlake2b(m.digests);
  if (root != a.chunks_blake2b())
    return Status::InvalidArgument("artifact " + DescribeArtifact(a) + ": its chunk digests have BLAKE2b " +
                                   root + ", not the offered chunks_blake2b " + a.chunks_blake2b());
  return Status::Ok();
}

std::string DescribeArtifact(const proto::Artifact& a) {
  return (a.name().empty() ? std::string("(unnamed)") : a.name().substr(0, 64)) + " (" + SizeText(a.bytes()) +
         ", BLAKE2b " + a.blake2b().substr(0, 16) + "...)";
}

}  // namespace murmur::node
