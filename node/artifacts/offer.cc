#include "node/artifacts/offer.h"

#include <fcntl.h>
#include <unistd.h>

#include <deque>
#include <vector>

namespace murmur::node {

namespace {

Result<proto::ArtifactState> Answer(Result<proto::ControlResponse> response, const ControlSession& session) {
  MURMUR_ASSIGN_OR_RETURN(proto::ControlResponse r, std::move(response));
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
  *offer.mutable_artifact_offer() = OfferOf(file.manifest);
  MURMUR_ASSIGN_OR_RETURN(proto::ArtifactState state, Answer(session.Call(offer, timeout), session));
  OfferReport report;
  report.complete = state.complete();
  report.chunks_had = state.complete() ? file.manifest.digests.size() : state.chunks_have();
  if (state.complete()) return report;

  const int fd = ::open(file.path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::NotFound("cannot open '" + file.path + "'");
  std::vector<std::uint8_t> buf(a.chunk_bytes());
  Status st = Status::Ok();
  // Up to kOfferWindow puts are on their way at once, so that reading,
  // hashing and sealing the next chunks here overlaps the daemon's work on
  // the earlier ones; the daemon answers in order.
  std::deque<std::uint64_t> in_flight;
  std::uint64_t next = state.chunks_have(), sent = 0;
  while (st.ok()) {
    while (in_flight.size() < kOfferWindow && next < file.manifest.digests.size() && sent < max_chunks) {
      const std::uint64_t n = ChunkSize(a, next);
      if (::pread(fd, buf.data(), n, static_cast<off_t>(next * a.chunk_bytes())) != static_cast<ssize_t>(n) ||
          ChunkDigest(crypto::ByteSpan(buf.data(), n)) != file.manifest.digests[next]) {
        st = Status::FailedPrecondition("'" + file.path + "' changed since it was hashed (chunk " +
                                        std::to_string(next) + " differs); hash it again");
        break;
      }
      proto::ControlRequest put;
      put.mutable_artifact_put()->set_blake2b(a.blake2b());
      put.mutable_artifact_put()->set_index(next);
      put.mutable_artifact_put()->set_data(buf.data(), n);
      st = session.Send(put, timeout);
      if (!st.ok()) break;
      in_flight.push_back(next++);
      ++sent;
    }
    if (in_flight.empty()) break;
    auto answered = Answer(session.Receive(timeout), session);
    if (!answered.ok()) {
      if (st.ok()) st = answered.status();
      break;
    }
    state = *answered;
    ++report.chunks_sent;
    report.bytes_sent += ChunkSize(a, in_flight.front());
    in_flight.pop_front();
    if (state.complete()) break;
  }
  ::close(fd);
  if (!st.ok()) return st;
  report.complete = state.complete();
  return report;
}

}  // namespace murmur::node
