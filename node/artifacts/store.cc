#include "node/artifacts/store.h"

#include <fcntl.h>
#include <unistd.h>

#include <filesystem>
#include <vector>

#include "crypto/file_io.h"
#include "crypto/hmac.h"

namespace murmur::node {

namespace fs = std::filesystem;

namespace {

constexpr std::size_t kMaxManifestFileBytes = 2u << 20;

// BLAKE2b-512 of the first `bytes` of the file at `path`, read a chunk at a time.
Result<std::string> HashFile(const std::string& path, std::uint64_t bytes) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::NotFound("cannot open '" + path + "'");
  crypto::Blake2bHasher h;
  std::vector<std::uint8_t> buf(kArtifactChunkBytes);
  std::uint64_t done = 0;
  Status st = Status::Ok();
  while (done < bytes) {
    const auto want = static_cast<std::size_t>(std::min<std::uint64_t>(buf.size(), bytes - done));
    const ssize_t got = ::pread(fd, buf.data(), want, static_cast<off_t>(done));
    if (got <= 0) {
      st = Status::DataLoss("reading '" + path + "' failed or it is shorter than " + std::to_string(bytes) +
                            " bytes");
      break;
    }
    h.Update(crypto::ByteSpan(buf.data(), static_cast<std::size_t>(got)));
    done += static_cast<std::uint64_t>(got);
  }
  ::close(fd);
  if (!st.ok()) return st;
  return crypto::ToHex(h.Final());
}

Status WriteAt(const std::string& path, std::uint64_t offset, crypto::ByteSpan data) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return Status::Unavailable("cannot open '" + path + "' for writing");
  std::size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = ::pwrite(fd, data.data() + done, data.size() - done, static_cast<off_t>(offset + done));
    if (n <= 0) {
      ::close(fd);
      return Status::Unavailable("writing '" + path + "' failed (disk full?)");
    }
    done += static_cast<std::size_t>(n);
  }
  ::close(fd);
  return Status::Ok();
}

Status SyncPath(const std::string& path, bool directory) {
  const int fd = ::open(path.c_str(), (directory ? O_RDONLY | O_DIRECTORY : O_RDONLY) | O_CLOEXEC);
  if (fd < 0) return Status::Unavailable("cannot open '" + path + "' to sync it");
  const int rc = ::fsync(fd);
  ::close(fd);
  if (rc != 0) return Status::Unavailable("fsync '" + path + "' failed");
  return Status::Ok();
}

Result<ArtifactManifest> ReadManifest(const std::string& path) {
  MURMUR_ASSIGN_OR_RETURN(std::string bytes, crypto::ReadSmallFile(path, kMaxManifestFileBytes));
  proto::ArtifactOffer offer;
  if (!offer.ParseFromString(bytes)) return Status::DataLoss("'" + path + "' is not an artifact manifest");
  ArtifactManifest m = ManifestOf(offer);
  MURMUR_RETURN_IF_ERROR(CheckManifest(m));
  return m;
}

std::string Message(const ArtifactManifest& m) { return DescribeArtifact(m.artifact); }

}  // namespace

Result<std::unique_ptr<ArtifactStore>> ArtifactStore::Open(const std::string& dir, ArtifactLimits limits) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return Status::Unavailable("cannot create the artifact store '" + dir + "': " + ec.message());
  std::unique_ptr<ArtifactStore> store(new ArtifactStore(dir, limits));
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    const std::string stem = name.substr(0, 2 * crypto::kHashLen);
    const std::string suffix = name.size() > stem.size() ? name.substr(stem.size()) : "";
    if (!IsBlake2bHex(stem) || !(suffix.empty() || suffix == ".part" || suffix == ".manifest")) {
      if (name.find(".tmp") != std::string::npos) fs::remove(entry.path(), ec);  // an interrupted write
      continue;
    }
    if (suffix.empty() && entry.is_regular_file(ec)) {
      store->complete_[stem] = entry.file_size(ec);
    } else if (suffix == ".manifest") {
      auto m = ReadManifest(entry.path().string());
      if (!m.ok() || m->artifact.blake2b() != stem || store->partial_.size() >= kMaxPartialArtifacts) {
        store->Drop(stem);  // unreadable: the next offer starts it afresh
        continue;
      }
      store->partial_[stem] = Partial{std::move(m).value(), 0, 0, false};
    }
  }
  if (ec) return Status::Unavailable("cannot list the artifact store '" + dir + "': " + ec.message());
  // A complete file wins over a partial one of the same name; a .part
  // without its manifest is dropped.
  for (const auto& [name, bytes] : store->complete_) {
    (void)bytes;
    if (store->partial_.erase(name) > 0) {
      fs::remove(store->Path(name, ".part"), ec);
      fs::remove(store->Path(name, ".manifest"), ec);
    }
  }
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.size() == 2 * crypto::kHashLen + 5 && name.ends_with(".part") &&
        !store->partial_.count(name.substr(0, 2 * crypto::kHashLen)))
      fs::remove(entry.path(), ec);
  }
  return store;
}

std::string ArtifactStore::Path(const std::string& blake2b, const char* suffix) const {
  return dir_ + "/" + blake2b + suffix;
}

std::string ArtifactStore::PathOf(const std::string& blake2b) const {
  std::lock_guard lock(mu_);
  return complete_.count(blake2b) ? Path(blake2b, "") : "";
}

Status ArtifactStore::Verify(const proto::Artifact& artifact) {
  std::lock_guard lock(mu_);
  Status st = Refused(VerifyLocked(artifact));
  if (st.code() != StatusCode::kDataLoss) return st;
  return Status::DataLoss(st.message() + ", and the next offer fetches it again");
}

Status ArtifactStore::VerifyLocked(const proto::Artifact& artifact) {
  const std::string& name = artifact.blake2b();
  if (!complete_.count(name))
    return Status::NotFound("artifact " + DescribeArtifact(artifact) + " is not in this daemon's store");
  const std::string path = Path(name, "");
  std::error_code ec;
  const std::uint64_t size = fs::file_size(path, ec);
  Result<std::string> have =
      ec ? Result<std::string>(Status::NotFound("cannot read '" + path + "'")) : HashFile(path, size);
  if (have.ok() && *have == name) return Status::Ok();
  fs::remove(path, ec);
  complete_.erase(name);
  return Status::DataLoss("stored artifact " + DescribeArtifact(artifact) + " at '" + path +
                          "' has BLAKE2b " + (have.ok() ? *have : have.status().message()) +
                          ", not its name " + name + " (its bytes changed on disk); it was removed");
}

proto::ArtifactState ArtifactStore::StateOf(const std::string& blake2b) const {
  proto::ArtifactState s;
  s.set_blake2b(blake2b);
  auto r = received_.find(blake2b);
  s.set_bytes_received(r == received_.end() ? 0 : r->second);
  if (auto p = partial_.find(blake2b); p != partial_.end()) {
    s.set_complete(false);
    s.set_chunks_have(p->second.chunks_have);
    s.set_chunks_total(ChunkCount(p->second.manifest.artifact));
  } else {
    s.set_complete(complete_.count(blake2b) > 0);
  }
  return s;
}

Result<std::string> ArtifactStore::ReadChunk(const std::string& blake2b, std::uint64_t index,
                                             std::uint32_t chunk_bytes) const {
  std::lock_guard lock(mu_);
  auto it = complete_.find(blake2b);
  if (it == complete_.end()) return Status::NotFound("no complete copy here");
  const std::uint64_t start = index * chunk_bytes;
  if (chunk_bytes == 0 || index >= (it->second + chunk_bytes - 1) / chunk_bytes)
    return Status::OutOfRange("past the file's end");
  const auto n = static_cast<std::size_t>(std::min<std::uint64_t>(chunk_bytes, it->second - start));
  std::string out(n, '\0');
  const std::string path = Path(blake2b, "");
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::NotFound("cannot open '" + path + "'");
  const ssize_t got = ::pread(fd, out.data(), n, static_cast<off_t>(start));
  ::close(fd);
  if (got != static_cast<ssize_t>(n)) return Status::DataLoss("reading '" + path + "' failed");
  return out;
}

proto::ArtifactState ArtifactStore::State(const std::string& blake2b) const {
  std::lock_guard lock(mu_);
  return StateOf(blake2b);
}

std::uint64_t ArtifactStore::bytes_used() const {
  std::lock_guard lock(mu_);
  return UsedLocked();
}

std::uint64_t ArtifactStore::UsedLocked() const {
  std::uint64_t used = 0;
  for (const auto& [name, bytes] : complete_) used += bytes;
  for (const auto& [name, p] : partial_) used += p.manifest.artifact.bytes();
  return used;
}

std::uint64_t ArtifactStore::bytes_received() const {
  std::lock_guard lock(mu_);
  return bytes_received_;
}

std::uint64_t ArtifactStore::refusals() const {
  std::lock_guard lock(mu_);
  return refusals_;
}

std::uint64_t ArtifactStore::files_completed() const {
  std::lock_guard lock(mu_);
  return files_completed_;
}

void ArtifactStore::Drop(const std::string& blake2b) {
  std::error_code ec;
  fs::remove(Path(blake2b, ".part"), ec);
  fs::remove(Path(blake2b, ".manifest"), ec);
  partial_.erase(blake2b);
}

Result<std::uint64_t> ArtifactStore::ResumePoint(const ArtifactManifest& m) {
  const std::string path = Path(m.artifact.blake2b(), ".part");
  std::error_code ec;
  const std::uint64_t size = fs::exists(path, ec) ? fs::file_size(path, ec) : 0;
  std::uint64_t good = 0, offset = 0;
  if (size > 0) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return Status::Unavailable("cannot open '" + path + "'");
    std::vector<std::uint8_t> buf(m.artifact.chunk_bytes());
    for (std::uint64_t i = 0; i < m.digests.size(); ++i) {
      const std::uint64_t n = ChunkSize(m.artifact, i);
      if (offset + n > size) break;
      if (::pread(fd, buf.data(), n, static_cast<off_t>(offset)) != static_cast<ssize_t>(n)) break;
      if (ChunkDigest(crypto::ByteSpan(buf.data(), n)) != m.digests[i]) break;
      ++good;
      offset += n;
    }
    ::close(fd);
  }
  if (size != offset) {
    if (::truncate(path.c_str(), static_cast<off_t>(offset)) != 0 && offset > 0)
      return Status::Unavailable("cannot truncate '" + path + "'");
  }
  return good;
}

Result<proto::ArtifactState> ArtifactStore::Offer(const ArtifactManifest& offered) {
  std::lock_guard lock(mu_);
  return Refused(OfferLocked(offered));
}

Result<proto::ArtifactState> ArtifactStore::OfferLocked(const ArtifactManifest& offered) {
  MURMUR_RETURN_IF_ERROR(CheckManifest(offered));
  const proto::Artifact& a = offered.artifact;
  const std::string& name = a.blake2b();
  // A stored file is hashed again: one whose bytes changed is removed and
  // offered afresh, and the answer says so.
  std::string note;
  if (complete_.count(name)) {
    Status intact = VerifyLocked(a);
    if (intact.ok()) return StateOf(name);
    ++refusals_;
    note = intact.message() + ", and this offer fetches it again";
  }
  auto answer = [&]() {
    proto::ArtifactState s = StateOf(name);
    if (!note.empty()) s.set_note(note);
    return s;
  };
  if (a.bytes() > limits_.max_file_bytes)
    return Status::ResourceExhausted("artifact " + Message(offered) + " is " + std::to_string(a.bytes()) +
                                     " bytes, over this daemon's artifact_max_bytes " +
                                     std::to_string(limits_.max_file_bytes));
  if (auto p = partial_.find(name); p != partial_.end()) {
    const proto::Artifact& held = p->second.manifest.artifact;
    if (held.chunks_blake2b() == a.chunks_blake2b() && held.chunk_bytes() == a.chunk_bytes() &&
        held.bytes() == a.bytes()) {
      if (!p->second.checked) {
        MURMUR_ASSIGN_OR_RETURN(p->second.chunks_have, ResumePoint(p->second.manifest));
        p->second.checked = true;
      }
      p->second.manifest.artifact.set_name(a.name());
      p->second.touched = ++tick_;
      return answer();
    }
    Drop(name);  // cut another way: start over
  }
  const std::uint64_t used = UsedLocked();
  if (used + a.bytes() > limits_.max_store_bytes)
    return Status::ResourceExhausted("artifact " + Message(offered) + " needs " + std::to_string(a.bytes()) +
                                     " bytes and the store '" + dir_ + "' holds " + std::to_string(used) +
                                     " (complete and partial files), over this daemon's "
                                     "artifact_store_max_bytes " +
                                     std::to_string(limits_.max_store_bytes) +
                                     " (remove unneeded files there, or raise the bound)");
  if (partial_.size() >= kMaxPartialArtifacts) {
    auto oldest = partial_.begin();
    for (auto it = partial_.begin(); it != partial_.end(); ++it)
      if (it->second.touched < oldest->second.touched) oldest = it;
    Drop(std::string(oldest->first));
  }
  const std::string bytes = OfferOf(offered).SerializeAsString();
  MURMUR_RETURN_IF_ERROR(crypto::WriteFileAtomic(Path(name, ".manifest"), crypto::AsBytes(bytes), 0644));
  Partial& p = partial_[name];
  p.manifest = offered;
  p.touched = ++tick_;
  p.checked = true;
  MURMUR_ASSIGN_OR_RETURN(p.chunks_have, ResumePoint(p.manifest));  // a .part left without its manifest
  if (p.chunks_have == p.manifest.digests.size()) MURMUR_RETURN_IF_ERROR(Complete(p));
  return answer();
}

Result<proto::ArtifactState> ArtifactStore::Put(const std::string& blake2b, std::uint64_t index,
                                                crypto::ByteSpan data) {
  std::lock_guard lock(mu_);
  return Refused(PutLocked(blake2b, index, data));
}

Result<proto::ArtifactState> ArtifactStore::PutLocked(const std::string& blake2b, std::uint64_t index,
                                                      crypto::ByteSpan data) {
  if (complete_.count(blake2b)) return StateOf(blake2b);
  auto it = partial_.find(blake2b);
  if (it == partial_.end() || !it->second.checked)
    return Status::FailedPrecondition("artifact " + blake2b.substr(0, 16) +
                                      "... is not offered on this daemon (an artifact_offer comes first)");
  Partial& p = it->second;
  const proto::Artifact& a = p.manifest.artifact;
  if (index != p.chunks_have)
    return Status::FailedPrecondition("chunk " + std::to_string(index) + " of artifact " +
                                      Message(p.manifest) + ": this daemon holds chunks 0.." +
                                      std::to_string(p.chunks_have) + " (exclusive) and takes chunk " +
                                      std::to_string(p.chunks_have) + " next");
  if (data.size() != ChunkSize(a, index))
    return Status::InvalidArgument("chunk " + std::to_string(index) + " of artifact " + Message(p.manifest) +
                                   " has " + std::to_string(data.size()) + " bytes, not " +
                                   std::to_string(ChunkSize(a, index)));
  const std::string digest = ChunkDigest(data);
  if (digest != p.manifest.digests[index])
    return Status::DataLoss(
        "chunk " + std::to_string(index) + " of artifact " + Message(p.manifest) + " has BLAKE2b-256 " +
        crypto::ToHex(crypto::AsBytes(digest)) + ", but the offer's digest for it is " +
        crypto::ToHex(crypto::AsBytes(p.manifest.digests[index])) + "; it was not stored");
  MURMUR_RETURN_IF_ERROR(WriteAt(Path(blake2b, ".part"), index * a.chunk_bytes(), data));
  ++p.chunks_have;
  p.touched = ++tick_;
  received_[blake2b] += data.size();
  bytes_received_ += data.size();
  if (p.chunks_have == p.manifest.digests.size()) MURMUR_RETURN_IF_ERROR(Complete(p));
  return StateOf(blake2b);
}

Status ArtifactStore::Complete(Partial& p) {
  const ArtifactManifest m = p.manifest;  // p goes away below
  const std::string name = m.artifact.blake2b();
  const std::string part = Path(name, ".part");
  if (m.artifact.bytes() == 0) MURMUR_RETURN_IF_ERROR(WriteAt(part, 0, {}));
  Result<std::string> have = HashFile(part, m.artifact.bytes());
  if (!have.ok() || *have != name) {
    Drop(name);
    return Status::DataLoss("the bytes received for artifact " + Message(m) + " have BLAKE2b " +
                            (have.ok() ? *have : have.status().message()) + ", not the offered " + name +
                            "; they were dropped");
  }
  MURMUR_RETURN_IF_ERROR(SyncPath(part, false));
  std::error_code ec;
  fs::rename(part, Path(name, ""), ec);
  if (ec) return Status::Unavailable("cannot move '" + part + "' into place: " + ec.message());
  MURMUR_RETURN_IF_ERROR(SyncPath(dir_, true));
  fs::remove(Path(name, ".manifest"), ec);
  partial_.erase(name);
  complete_[name] = m.artifact.bytes();
  ++files_completed_;
  return Status::Ok();
}

}  // namespace murmur::node
