// Fuzzes the artifact store (node/artifacts/store.h) the way operators and
// disks can hurt it: an input is a file (up to 16 kB, cut into 4 kB chunks)
// and then operations on a store in a scratch folder: correct chunks,
// altered or out-of-order chunks, offers of altered manifests, raw bytes
// parsed as an ArtifactOffer (the control request's decoder), a store
// reopened over a torn or rotten partial file, a manifest file of raw
// bytes, a stored file altered on disk, and raw bytes given to the
// decoders of the peers' artifact messages. Whatever happens, the store
// must never hold a complete file whose bytes are not the file's, a
// complete file it holds must verify unless the fuzzer altered it, and
// Verify must catch every alteration (and remove the file).
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "node/artifacts/messages.h"
#include "node/artifacts/store.h"

namespace {

namespace fs = std::filesystem;
using murmur::node::ArtifactManifest;
using murmur::node::ArtifactStore;

struct Input {
  const std::uint8_t* p;
  std::size_t n;
  std::uint8_t Byte() {
    if (n == 0) return 0;
    --n;
    return *p++;
  }
  std::string Bytes(std::size_t want) {
    want = std::min(want, n);
    std::string s(reinterpret_cast<const char*>(p), want);
    p += want;
    n -= want;
    return s;
  }
};

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

ArtifactManifest ManifestOf(const std::string& content) {
  ArtifactManifest m;
  m.artifact.set_name("fuzz");
  m.artifact.set_chunk_bytes(murmur::node::kMinArtifactChunkBytes);
  m.artifact.set_bytes(content.size());
  for (std::size_t at = 0; at < content.size(); at += murmur::node::kMinArtifactChunkBytes)
    m.digests.push_back(murmur::node::ChunkDigest(
        murmur::crypto::AsBytes(std::string_view(content).substr(at, murmur::node::kMinArtifactChunkBytes))));
  m.artifact.set_chunks_blake2b(murmur::node::DigestsBlake2b(m.digests));
  const std::string path = fs::temp_directory_path() / "murmur_fuzz_content";
  std::ofstream(path, std::ios::binary) << content;
  m.artifact.set_blake2b(murmur::node::DescribeArtifactFile(path, "fuzz").value().artifact.blake2b());
  return m;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const std::string dir = "/dev/shm/murmur_artifact_fuzz_" + std::to_string(::getpid());
  std::error_code ec;
  fs::remove_all(dir, ec);
  Input in{data, size};
  const std::size_t length = (std::size_t{in.Byte()} << 8 | in.Byte()) % (16 * 1024 + 1);
  const std::string content = in.Bytes(length);
  const ArtifactManifest m = ManifestOf(content);
  const std::string& name = m.artifact.blake2b();
  const murmur::node::ArtifactLimits limits{64 * 1024, 96 * 1024};
  auto store = ArtifactStore::Open(dir, limits).value();
  bool altered = false;  // the fuzzer wrote to the complete file since it was last verified
  std::uint64_t next = 0;
  for (int ops = 0; in.n > 0 && ops < 64; ++ops) {
    const std::uint8_t op = in.Byte() % 10;
    switch (op) {
      case 0: {  // the next chunk, correct
        const std::size_t at = next * m.artifact.chunk_bytes();
        if (at >= content.size()) break;
        auto s = store->Put(
            name, next,
            murmur::crypto::AsBytes(std::string_view(content).substr(at, m.artifact.chunk_bytes())));
        if (s.ok()) next = s->complete() ? m.digests.size() : s->chunks_have();
        break;
      }
      case 1: {  // a chunk of any index with one byte changed
        const std::uint64_t index = in.Byte() % (m.digests.size() + 2);
        std::string chunk = content.substr(std::min(content.size(), index * m.artifact.chunk_bytes()),
                                           m.artifact.chunk_bytes());
        if (!chunk.empty()) chunk[in.Byte() % chunk.size()] ^= static_cast<char>(in.Byte() | 1);
        (void)store->Put(name, index, murmur::crypto::AsBytes(chunk));
        break;
      }
      case 2:  // a restart
        store.reset();
        store = ArtifactStore::Open(dir, limits).value();
        break;
      case 3: {  // the offer, maybe altered
        ArtifactManifest offered = m;
        const std::uint8_t how = in.Byte();
        if (how % 4 == 1 && !offered.digests.empty()) offered.digests[how % offered.digests.size()][0] ^= 1;
        if (how % 4 == 2) offered.artifact.set_bytes(offered.artifact.bytes() + in.Byte());
        if (how % 4 == 3) offered.artifact.set_chunk_bytes(in.Byte() << 8);
        auto s = store->Offer(offered);
        if (s.ok()) next = s->complete() ? m.digests.size() : s->chunks_have();
        break;
      }
      case 4: {  // the partial file torn or rotten
        const std::string part = dir + "/" + name + ".part";
        if (!fs::exists(part, ec)) break;
        std::string bytes = ReadAll(part);
        if (bytes.empty()) break;
        const std::size_t at = (std::size_t{in.Byte()} << 6) % bytes.size();
        if (in.Byte() % 2)
          bytes.resize(at);
        else
          bytes[at] ^= 0x10;
        std::ofstream(part, std::ios::binary | std::ios::trunc) << bytes;
        break;
      }
      case 5: {  // a manifest file of raw bytes, then a restart
        std::ofstream(dir + "/" + name + ".manifest", std::ios::binary | std::ios::trunc)
            << in.Bytes(in.Byte() * 4);
        store.reset();
        store = ArtifactStore::Open(dir, limits).value();
        break;
      }
      case 6: {  // the stored file altered on disk
        const std::string path = store->PathOf(name);
        if (path.empty() || content.empty()) break;
        std::string bytes = ReadAll(path);
        bytes[in.Byte() % bytes.size()] ^= 0x01;
        std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
        altered = true;
        break;
      }
      case 7: {  // verify: catches every alteration and removes the file
        if (store->PathOf(name).empty()) break;
        const bool intact = ReadAll(store->PathOf(name)) == content;  // two flips of one byte restore it
        const bool ok = store->Verify(m.artifact).ok();
        if (ok != intact) std::abort();
        if (!ok && !store->PathOf(name).empty()) std::abort();
        altered = false;
        break;
      }
      case 9: {  // raw bytes as a peer's artifact message; what decodes re-encodes to the same bytes
        static const murmur::DecoderTable decoders = murmur::node::ArtifactDecoders();
        const std::uint32_t kind =
            in.Byte() % 2 ? murmur::node::kArtifactChunkKind : murmur::node::kArtifactRequestKind;
        const std::string raw = in.Bytes(std::size_t{in.Byte()} * 4);
        const std::span<const std::uint8_t> bytes(reinterpret_cast<const std::uint8_t*>(raw.data()),
                                                  raw.size());
        auto decoded = decoders.at(kind)(bytes);
        if (!decoded.ok()) break;
        std::vector<std::uint8_t> again;
        (*decoded)->EncodeTo(again);
        if (again.size() != (*decoded)->EncodedSize() ||
            again != std::vector<std::uint8_t>(bytes.begin(), bytes.end()))
          std::abort();
        break;
      }
      case 8: {  // raw bytes as the control request's ArtifactOffer
        murmur::proto::ArtifactOffer offer;
        if (!offer.ParseFromString(in.Bytes(in.Byte() * 4))) break;
        (void)store->Offer(murmur::node::ManifestOf(offer));
        break;
      }
    }
    // A complete file the fuzzer did not alter is the file, byte for byte.
    const std::string path = store->PathOf(name);
    if (!path.empty() && !altered && ReadAll(path) != content) std::abort();
    if (path.empty()) altered = false;
  }
  store.reset();
  fs::remove_all(dir, ec);
  return 0;
}
