// The artifact store and its offer (node/artifacts): a file by content moves
// in chunks, each checked against a digest that b2sum computes too; a broken
// transfer resumes after the last chunk that verifies; altered bytes, a lying
// manifest and files over the bounds are refused, naming both hashes or both
// numbers; a file the store has moves no bytes.
#include <doctest/doctest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "crypto/bytes.h"
#include "node/artifacts/artifact.h"
#include "node/artifacts/store.h"

namespace murmur::node {
namespace {

namespace fs = std::filesystem;

struct Dir {
  fs::path path = fs::temp_directory_path() / ("murmur_artifacts_" + std::to_string(::getpid()));
  Dir() {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~Dir() { fs::remove_all(path); }
};

std::string Bytes(std::size_t n, std::uint32_t seed) {
  std::string s(n, '\0');
  std::uint32_t x = seed * 2654435761u + 1;
  for (char& c : s) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    c = static_cast<char>(x);
  }
  return s;
}

fs::path Write(const fs::path& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

std::string Chunk(const std::string& file, const proto::Artifact& a, std::uint64_t i) {
  return file.substr(i * a.chunk_bytes(), ChunkSize(a, i));
}

// Sends chunks [from, to) of `file`; each must be taken.
void PutChunks(ArtifactStore& store, const ArtifactManifest& m, const std::string& file, std::uint64_t from,
               std::uint64_t to) {
  for (std::uint64_t i = from; i < to; ++i) {
    auto s = store.Put(m.artifact.blake2b(), i, crypto::AsBytes(Chunk(file, m.artifact, i)));
    REQUIRE_MESSAGE(s.ok(), s.status().ToString());
  }
}

constexpr std::uint32_t kChunk = 4096;

}  // namespace

TEST_CASE("An artifact's hashes are b2sum's: BLAKE2b-512 of the file, BLAKE2b-256 of each chunk") {
  Dir d;
  const fs::path f = Write(d.path / "abc", "abc");
  auto m = DescribeArtifactFile(f.string(), "abc", kChunk);
  REQUIRE(m.ok());
  // RFC 7693 appendix A, and `printf abc | b2sum -l 256`.
  CHECK(m->artifact.blake2b() ==
        "ba80a53f981c4d0d6a2797b69f12f6e94c212f14685ac4b74b12bb6fdbffa2d17d87c5392aab792dc252d5de4533cc95"
        "18d38aa8dbf1925ab92386edd4009923");
  REQUIRE(m->digests.size() == 1);
  CHECK(crypto::ToHex(crypto::AsBytes(m->digests[0])) ==
        "bddd813c634239723171ef3fee98579b94964e3bb1cb3e427262c8c068d52319");
  CHECK(m->artifact.bytes() == 3);
  CHECK(CheckManifest(*m).ok());
  // 3 full chunks and a 100-byte one; an empty file has no chunk.
  const fs::path g = Write(d.path / "g", Bytes(3 * kChunk + 100, 1));
  auto n = DescribeArtifactFile(g.string(), "g", kChunk).value();
  CHECK(n.digests.size() == 4);
  CHECK(ChunkSize(n.artifact, 3) == 100);
  auto e = DescribeArtifactFile(Write(d.path / "e", "").string(), "e", kChunk).value();
  CHECK(e.digests.empty());
  CHECK(CheckManifest(e).ok());
}

TEST_CASE("An offered artifact arrives chunk by chunk, verified, and a second offer moves nothing") {
  Dir d;
  const std::string file = Bytes(5 * kChunk + 7, 2);
  const fs::path src = Write(d.path / "model.pt", file);
  const ArtifactManifest m = DescribeArtifactFile(src.string(), "model.pt", kChunk).value();
  auto store = ArtifactStore::Open((d.path / "store").string(), {}).value();
  auto s = store->Offer(m);
  REQUIRE(s.ok());
  CHECK_FALSE(s->complete());
  CHECK(s->chunks_have() == 0);
  CHECK(s->chunks_total() == 6);
  CHECK(store->PathOf(m.artifact.blake2b()).empty());
  // Only the next chunk is taken.
  auto early = store->Put(m.artifact.blake2b(), 1, crypto::AsBytes(Chunk(file, m.artifact, 1)));
  REQUIRE_FALSE(early.ok());
  CHECK(early.status().message().find("takes chunk 0 next") != std::string::npos);
  PutChunks(*store, m, file, 0, 6);
  const std::string path = store->PathOf(m.artifact.blake2b());
  REQUIRE_FALSE(path.empty());
  std::ifstream in(path, std::ios::binary);
  CHECK(std::string(std::istreambuf_iterator<char>(in), {}) == file);
  CHECK(store->bytes_received() == file.size());
  CHECK(store->Verify(m.artifact).ok());
  auto again = store->Offer(m);
  REQUIRE(again.ok());
  CHECK(again->complete());
  CHECK(store->bytes_received() == file.size());
  // A store opened afresh finds it, and nothing else is left in its folder.
  store.reset();
  auto reopened = ArtifactStore::Open((d.path / "store").string(), {}).value();
  CHECK(reopened->PathOf(m.artifact.blake2b()) == path);
  CHECK(std::distance(fs::directory_iterator(d.path / "store"), fs::directory_iterator{}) == 1);
}

TEST_CASE(
    "A transfer broken after some chunks resumes after the last chunk that verifies, also after a restart") {
  Dir d;
  const std::string file = Bytes(8 * kChunk, 3);
  const ArtifactManifest m = DescribeArtifactFile(Write(d.path / "f", file).string(), "f", kChunk).value();
  const std::string dir = (d.path / "store").string();
  {
    auto store = ArtifactStore::Open(dir, {}).value();
    REQUIRE(store->Offer(m).ok());
    PutChunks(*store, m, file, 0, 5);
  }
  // A crash mid-write leaves half a chunk, and a bit of chunk 4 rots on disk.
  const fs::path part = fs::path(dir) / (m.artifact.blake2b() + ".part");
  {
    std::ofstream(part, std::ios::binary | std::ios::app) << file.substr(5 * kChunk, kChunk / 2);
    std::fstream f(part, std::ios::binary | std::ios::in | std::ios::out);
    f.seekp(4 * kChunk + 10);
    f.put(static_cast<char>(file[4 * kChunk + 10] ^ 1));
  }
  auto store = ArtifactStore::Open(dir, {}).value();
  auto s = store->Offer(m);
  REQUIRE(s.ok());
  CHECK(s->chunks_have() == 4);  // chunks 0-3 verify; 4 does not, the half chunk is cut
  CHECK(fs::file_size(part) == 4 * kChunk);
  PutChunks(*store, m, file, 4, 8);
  CHECK(store->bytes_received() == 4 * kChunk);  // only the missing chunks moved
  CHECK(store->Verify(m.artifact).ok());
}

TEST_CASE("A chunk altered in transit is refused naming both digests, and the transfer goes on") {
  Dir d;
  const std::string file = Bytes(3 * kChunk, 4);
  const ArtifactManifest m = DescribeArtifactFile(Write(d.path / "f", file).string(), "f", kChunk).value();
  auto store = ArtifactStore::Open((d.path / "store").string(), {}).value();
  REQUIRE(store->Offer(m).ok());
  std::string bad = Chunk(file, m.artifact, 0);
  bad[100] ^= 0x40;
  auto refused = store->Put(m.artifact.blake2b(), 0, crypto::AsBytes(bad));
  REQUIRE_FALSE(refused.ok());
  const std::string msg = refused.status().message();
  CHECK(msg.find("has BLAKE2b-256 " + crypto::ToHex(crypto::AsBytes(ChunkDigest(crypto::AsBytes(bad))))) !=
        std::string::npos);
  CHECK(msg.find("the offer's digest for it is " + crypto::ToHex(crypto::AsBytes(m.digests[0]))) !=
        std::string::npos);
  CHECK(store->refusals() == 1);
  PutChunks(*store, m, file, 0, 3);
  CHECK_FALSE(store->PathOf(m.artifact.blake2b()).empty());
}

TEST_CASE(
    "A manifest that does not describe its file is caught: digests against chunks_blake2b, bytes at the "
    "end") {
  Dir d;
  const std::string file = Bytes(2 * kChunk, 5);
  ArtifactManifest m = DescribeArtifactFile(Write(d.path / "f", file).string(), "f", kChunk).value();
  auto store = ArtifactStore::Open((d.path / "store").string(), {}).value();
  ArtifactManifest swapped = m;
  std::swap(swapped.digests[0], swapped.digests[1]);
  auto refused = store->Offer(swapped);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().message().find("not the offered chunks_blake2b " + m.artifact.chunks_blake2b()) !=
        std::string::npos);
  // Digests of other bytes, consistently rooted, under this file's name: every
  // chunk verifies, the whole does not, and nothing is kept.
  const std::string other = Bytes(2 * kChunk, 6);
  ArtifactManifest lying = DescribeArtifactFile(Write(d.path / "o", other).string(), "f", kChunk).value();
  const std::string theirs = lying.artifact.blake2b();
  lying.artifact.set_blake2b(m.artifact.blake2b());
  REQUIRE(store->Offer(lying).ok());
  REQUIRE(store->Put(m.artifact.blake2b(), 0, crypto::AsBytes(Chunk(other, m.artifact, 0))).ok());
  auto last = store->Put(m.artifact.blake2b(), 1, crypto::AsBytes(Chunk(other, m.artifact, 1)));
  REQUIRE_FALSE(last.ok());
  CHECK(last.status().message().find("have BLAKE2b " + theirs + ", not the offered " +
                                     m.artifact.blake2b()) != std::string::npos);
  CHECK(store->PathOf(m.artifact.blake2b()).empty());
  CHECK(std::distance(fs::directory_iterator(d.path / "store"), fs::directory_iterator{}) == 0);
}

TEST_CASE("A stored artifact whose bytes changed on disk is refused naming both hashes, and fetched again") {
  Dir d;
  const std::string file = Bytes(kChunk + 1, 7);
  const ArtifactManifest m = DescribeArtifactFile(Write(d.path / "f", file).string(), "f", kChunk).value();
  auto store = ArtifactStore::Open((d.path / "store").string(), {}).value();
  REQUIRE(store->Offer(m).ok());
  PutChunks(*store, m, file, 0, 2);
  const std::string path = store->PathOf(m.artifact.blake2b());
  std::string altered = file;
  altered[0] ^= 1;
  Write(path, altered);
  const std::string have = DescribeArtifactFile(path, "f", kChunk).value().artifact.blake2b();
  Status st = store->Verify(m.artifact);
  REQUIRE_FALSE(st.ok());
  CHECK(st.message().find("has BLAKE2b " + have + ", not its name " + m.artifact.blake2b()) !=
        std::string::npos);
  CHECK(store->PathOf(m.artifact.blake2b()).empty());
  auto s = store->Offer(m);
  REQUIRE(s.ok());
  CHECK(s->chunks_have() == 0);
  // Stored again and altered again: the next offer finds it, says so, and takes it afresh.
  PutChunks(*store, m, file, 0, 2);
  Write(path, altered);
  auto found = store->Offer(m);
  REQUIRE(found.ok());
  CHECK_FALSE(found->complete());
  CHECK(found->chunks_have() == 0);
  CHECK(found->note().find("has BLAKE2b " + have + ", not its name " + m.artifact.blake2b()) !=
        std::string::npos);
  PutChunks(*store, m, file, 0, 2);
  CHECK(store->Verify(m.artifact).ok());
}

TEST_CASE("Offers over the daemon's bounds are refused with both numbers") {
  Dir d;
  const std::string file = Bytes(10000, 8);
  const ArtifactManifest m = DescribeArtifactFile(Write(d.path / "f", file).string(), "big", kChunk).value();
  auto small = ArtifactStore::Open((d.path / "a").string(), ArtifactLimits{9999, 1u << 20}).value();
  auto over = small->Offer(m);
  REQUIRE_FALSE(over.ok());
  CHECK(over.status().message().find("is 10000 bytes, over this daemon's artifact_max_bytes 9999") !=
        std::string::npos);
  auto full = ArtifactStore::Open((d.path / "b").string(), ArtifactLimits{1u << 20, 15000}).value();
  REQUIRE(full->Offer(m).ok());  // 10000 reserved
  const ArtifactManifest m2 =
      DescribeArtifactFile(Write(d.path / "g", Bytes(6000, 9)).string(), "second", kChunk).value();
  auto no_room = full->Offer(m2);
  REQUIRE_FALSE(no_room.ok());
  CHECK(no_room.status().message().find("needs 6000 bytes") != std::string::npos);
  CHECK(no_room.status().message().find("holds 10000") != std::string::npos);
  CHECK(no_room.status().message().find("artifact_store_max_bytes 15000") != std::string::npos);
}

TEST_CASE("Malformed manifests and puts are refused, naming the field") {
  Dir d;
  auto store = ArtifactStore::Open((d.path / "s").string(), {}).value();
  ArtifactManifest m = DescribeArtifactFile(Write(d.path / "f", Bytes(100, 1)).string(), "f", kChunk).value();
  ArtifactManifest bad = m;
  bad.artifact.set_blake2b("ABC");
  CHECK(store->Offer(bad).status().message().find("field 'blake2b'") != std::string::npos);
  bad = m;
  bad.artifact.set_chunk_bytes(1);
  CHECK(store->Offer(bad).status().message().find("field 'chunk_bytes' is 1") != std::string::npos);
  bad = m;
  bad.digests.push_back(std::string(32, 'x'));
  CHECK(store->Offer(bad).status().message().find("2 chunk digests for 1 chunks") != std::string::npos);
  bad = m;
  bad.digests[0].resize(31);
  CHECK(store->Offer(bad).status().message().find("a chunk digest of 31 bytes") != std::string::npos);
  CHECK(store->Put(m.artifact.blake2b(), 0, crypto::AsBytes(std::string("x")))
            .status()
            .message()
            .find("not offered") != std::string::npos);
  REQUIRE(store->Offer(m).ok());
  CHECK(store->Put(m.artifact.blake2b(), 0, crypto::AsBytes(std::string("x")))
            .status()
            .message()
            .find("has 1 bytes, not 100") != std::string::npos);
}

}  // namespace murmur::node
