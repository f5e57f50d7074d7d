#include "node/artifacts/offer.h"

#include <fcntl.h>
#include <unistd.h>

#include <vector>

namespace murmur::node {

namespace {

Result<proto::ArtifactState> Ask(ControlSession& session, const proto::ControlRequest& request,
                                 std::chrono::milliseconds timeout) {
  MURMUR_ASSIGN_OR_RETURN(proto::ControlResponse r, session.Call(request, timeout));
  if (!r.ok()) return Status::FailedPrecondition("daemon " + session.address() + " refused: " + r.error());
  if (!r.has_artifact())
    return Status::DataLoss("daemon " + session.address() + " answered without its artifact state");
  return r.artifact();
}

}  // namespace

Result<OfferReport> OfferArtifact(ControlSession& session, const LocalArtifact& file,
                                  std::chrono::milliseconds timeout, std::uint64_t max_chunks) {
  const proto::Artifact& a = file.manifest.artifact;
  proto::ControlRequest offer;
  *offer.mutable_artifact_offer()->mutable_artifact() = a;
  for (const std::string& d : file.manifest.digests) offer.mutable_artifact_offer()->add_chunk_digests(d);
  MURMUR_ASSIGN_OR_RETURN(proto::ArtifactState state, Ask(session, offer, timeout));
  OfferReport report;
  report.complete = state.complete();
  report.chunks_had = state.complete() ? file.manifest.digests.size() : state.chunks_have();
  report.note = state.note();
  if (state.complete()) return report;

  const int fd = ::open(file.path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::NotFound("cannot open '" + file.path + "'");
  std::vector<std::uint8_t> buf(a.chunk_bytes());
  Status st = Status::Ok();
  for (std::uint64_t i = state.chunks_have();
       i < file.manifest.digests.size() && report.chunks_sent < max_chunks; ++i) {
    const std::uint64_t n = ChunkSize(a, i);
    if (::pread(fd, buf.data(), n, static_cast<off_t>(i * a.chunk_bytes())) != static_cast<ssize_t>(n) ||
        ChunkDigest(crypto::ByteSpan(buf.data(), n)) != file.manifest.digests[i]) {
      st = Status::FailedPrecondition("'" + file.path + "' changed since it was hashed (chunk " +
                                      std::to_string(i) + " differs); hash it again");
      break;
    }
    proto::ControlRequest put;
    put.mutable_artifact_put()->set_blake2b(a.blake2b());
    put.mutable_artifact_put()->set_index(i);
    put.mutable_artifact_put()->set_data(buf.data(), n);
    auto answered = Ask(session, put, timeout);
    if (!answered.ok()) {
      st = answered.status();
      break;
    }
    state = *answered;
    ++report.chunks_sent;
    report.bytes_sent += n;
    if (state.complete()) break;
  }
  ::close(fd);
  if (!st.ok()) return st;
  report.complete = state.complete();
  return report;
}

}  // namespace murmur::node
