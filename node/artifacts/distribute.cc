#include "node/artifacts/distribute.h"

#include <memory>
#include <thread>

namespace murmur::node {

namespace {

Result<proto::ArtifactState> StateFrom(Result<proto::ControlResponse> r, const std::string& address) {
  if (!r.ok()) return r.status();
  if (!r->ok()) return Status::FailedPrecondition("daemon " + address + " refused: " + r->error());
  return r->artifact();
}

}  // namespace

Result<DistributeReport> DistributeArtifact(const std::vector<FleetDaemon>& fleet,
                                            const crypto::Credentials& credentials,
                                            const crypto::TrustPolicy& policy, const LocalArtifact& file,
                                            const DistributeOptions& options) {
  const std::string& name = file.manifest.artifact.blake2b();
  const std::uint64_t total = file.manifest.digests.size();
  std::vector<std::unique_ptr<ControlSession>> sessions;
  for (const FleetDaemon& d : fleet) {
    MURMUR_ASSIGN_OR_RETURN(auto s, ControlSession::Open(d.address, credentials, policy, options.timeout));
    sessions.push_back(std::move(s));
  }
  proto::ControlRequest offer;
  *offer.mutable_artifact_offer() = OfferOf(file.manifest);

  DistributeReport report;
  std::vector<std::uint32_t> holders;
  std::vector<std::size_t> lacking;
  auto say = [&](std::size_t i, const proto::ArtifactState& st) {
    if (!st.note().empty() && options.say) options.say("daemon " + fleet[i].address + ": " + st.note());
  };
  for (std::size_t i = 0; i < fleet.size(); ++i) {
    MURMUR_ASSIGN_OR_RETURN(proto::ArtifactState st,
                            StateFrom(sessions[i]->Call(offer, options.timeout), fleet[i].address));
    say(i, st);
    if (st.complete()) {
      ++report.had;
      holders.push_back(fleet[i].id);
    } else {
      lacking.push_back(i);
    }
  }
  auto upload = [&](std::size_t i) -> Status {
    MURMUR_ASSIGN_OR_RETURN(OfferReport r, OfferArtifact(*sessions[i], file, options.timeout));
    if (!r.complete) return Status::DataLoss("daemon " + fleet[i].address + " did not complete the file");
    ++report.uploaded;
    report.resumed += r.chunks_had > 0 && r.chunks_sent > 0;
    report.bytes_uploaded += r.bytes_sent;
    holders.push_back(fleet[i].id);
    return Status::Ok();
  };
  // Seeds: the operator uploads when nobody holds it.
  std::size_t first = 0;
  if (holders.empty())
    for (; first < lacking.size() && first < std::max<std::size_t>(1, options.uploads); ++first)
      MURMUR_RETURN_IF_ERROR(upload(lacking[first]));
  std::vector<std::size_t> fetching(lacking.begin() + static_cast<std::ptrdiff_t>(first), lacking.end());
  if (fetching.empty()) return report;

  // The others fetch from the holders; each poll names the holders by then.
  auto fetch = [&](std::size_t i, bool with_offer) {
    proto::ControlRequest r;
    proto::ArtifactFetch& f = *r.mutable_artifact_fetch();
    if (with_offer)
      *f.mutable_offer() = offer.artifact_offer();
    else
      f.set_blake2b(name);
    for (std::uint32_t h : holders) f.add_sources(h);
    return StateFrom(sessions[i]->Call(r, options.timeout), fleet[i].address);
  };
  std::vector<std::uint64_t> have(fleet.size(), 0);
  for (std::size_t i : fetching) {
    MURMUR_ASSIGN_OR_RETURN(proto::ArtifactState st, fetch(i, true));
    have[i] = st.complete() ? total : st.chunks_have();
  }
  auto last_progress = std::chrono::steady_clock::now();
  while (!fetching.empty()) {
    std::this_thread::sleep_for(options.poll);
    std::vector<std::size_t> still;
    bool progress = false;
    for (std::size_t i : fetching) {
      MURMUR_ASSIGN_OR_RETURN(proto::ArtifactState st, fetch(i, false));
      const std::uint64_t now = st.complete() ? total : st.chunks_have();
      progress = progress || now > have[i];
      have[i] = now;
      if (st.complete()) {
        ++report.fetched;
        holders.push_back(fleet[i].id);
      } else if (st.note().rfind("the fetch stopped", 0) == 0) {
        say(i, st);
        MURMUR_RETURN_IF_ERROR(upload(i));  // fall back to the operator's copy
      } else {
        still.push_back(i);
      }
    }
    if (progress) last_progress = std::chrono::steady_clock::now();
    fetching = std::move(still);
    if (!fetching.empty() && std::chrono::steady_clock::now() - last_progress > options.stall) {
      if (options.say)
        options.say("no daemon's fetch made progress for " + std::to_string(options.stall.count() / 1000) +
                    " s: uploading to the " + std::to_string(fetching.size()) + " left");
      for (std::size_t i : fetching) MURMUR_RETURN_IF_ERROR(upload(i));
      fetching.clear();
    }
  }
  return report;
}

}  // namespace murmur::node
