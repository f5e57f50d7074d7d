// Artifacts: a file a job needs, named by its content (docs/daemon.md
// "Artifacts"; docs/protocol.md section 11).
//
// A file is cut into chunks of `chunk_bytes` (the last may be shorter, an
// empty file has none). Each chunk's digest is its BLAKE2b-256; the file is
// named by its BLAKE2b-512 (what `b2sum FILE` prints, the spec's
// model_blake2b) and its list of digests by `chunks_blake2b`, the BLAKE2b-512
// of the digests concatenated in order. A receiver that knows the Artifact
// checks the list against chunks_blake2b once, then each chunk against its
// digest as it arrives, and the whole file against blake2b at the end: a
// chunk altered on the way is refused alone, and a broken transfer resumes
// after the last chunk that verified.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "crypto/bytes.h"
#include "proto/control.pb.h"
#include "proto/node.pb.h"

namespace murmur::node {

inline constexpr std::uint32_t kArtifactChunkBytes = 512u << 10;  // what murmur job submit cuts
inline constexpr std::uint32_t kMinArtifactChunkBytes = 4u << 10;
inline constexpr std::uint32_t kMaxArtifactChunkBytes = 512u << 10;  // a put fits one control message
inline constexpr std::size_t kChunkDigestBytes = 32;                 // BLAKE2b-256

// An Artifact and the digests of its chunks, in order (kChunkDigestBytes each).
struct ArtifactManifest {
  proto::Artifact artifact;
  std::vector<std::string> digests;
};

// The manifest an offer carries (control request artifact_offer, and the
// HASH.manifest file of a partial artifact), and back. Unchecked: CheckManifest.
ArtifactManifest ManifestOf(const proto::ArtifactOffer& offer);
proto::ArtifactOffer OfferOf(const ArtifactManifest& m);

// Reads the file at `path` once: its BLAKE2b-512, size and chunk digests.
// `name` is what messages call it. NotFound, DataLoss on a read error.
Result<ArtifactManifest> DescribeArtifactFile(const std::string& path, const std::string& name,
                                              std::uint32_t chunk_bytes = kArtifactChunkBytes);

// The BLAKE2b-256 of one chunk (kChunkDigestBytes raw bytes).
std::string ChunkDigest(crypto::ByteSpan chunk);
// chunks_blake2b: the BLAKE2b-512 of the digests concatenated, in hex.
std::string DigestsBlake2b(const std::vector<std::string>& digests);

// The number of chunks, and the size of chunk `index`. REQUIRES: a checked artifact.
std::uint64_t ChunkCount(const proto::Artifact& a);
std::uint64_t ChunkSize(const proto::Artifact& a, std::uint64_t index);

// True for 128 lowercase hex digits.
bool IsBlake2bHex(const std::string& s);

// Checks an Artifact's fields: both hashes 128 lowercase hex digits,
// chunk_bytes in [kMinArtifactChunkBytes, kMaxArtifactChunkBytes], a name of
// at most 255 bytes. InvalidArgument naming the field.
Status CheckArtifact(const proto::Artifact& a);
// CheckArtifact, then: one digest of kChunkDigestBytes per chunk, and their
// BLAKE2b-512 equal to chunks_blake2b (InvalidArgument naming both hashes).
Status CheckManifest(const ArtifactManifest& m);

// "model.pt (1.2 GB, BLAKE2b 3f2a9c0d1e7b…)" for messages.
std::string DescribeArtifact(const proto::Artifact& a);

}  // namespace murmur::node
