#include "node/artifacts/fetcher.h"

#include <algorithm>

#include "core/log.h"

namespace murmur::node {

ArtifactFetcher::ArtifactFetcher(Env& env, ArtifactStore& store, FetcherOptions options)
    : env_(env), store_(store), options_(options) {}

ArtifactFetcher::~ArtifactFetcher() {
  for (auto& [name, a] : active_)
    if (a.timer != 0) env_.CancelTimer(a.timer);
}

bool ArtifactFetcher::SetSources(Active& a, std::vector<NodeId> sources) {
  sources.erase(std::remove(sources.begin(), sources.end(), env_.self()), sources.end());
  std::sort(sources.begin(), sources.end());
  sources.erase(std::unique(sources.begin(), sources.end()), sources.end());
  if (sources == a.sources) return false;
  const bool had = !a.sources.empty();
  const NodeId current = had ? a.sources[a.at] : 0;
  a.sources = std::move(sources);
  a.at = a.sources.empty() ? 0 : env_.self() % a.sources.size();
  // Keep asking the source asked now when it is still listed.
  if (had)
    for (std::size_t i = 0; i < a.sources.size(); ++i)
      if (a.sources[i] == current) a.at = i;
  return true;
}

Result<proto::ArtifactState> ArtifactFetcher::Fetch(const ArtifactManifest& m, std::vector<NodeId> sources) {
  MURMUR_ASSIGN_OR_RETURN(proto::ArtifactState st, store_.Offer(m));
  const std::string& name = m.artifact.blake2b();
  if (st.complete()) {
    if (auto it = active_.find(name); it != active_.end()) {
      if (it->second.timer != 0) env_.CancelTimer(it->second.timer);
      active_.erase(it);
    }
    return st;
  }
  auto [it, fresh] = active_.try_emplace(name);
  Active& a = it->second;
  a.manifest = m;
  SetSources(a, std::move(sources));
  if (fresh || a.stopped) {
    a.stopped = false;
    a.switches = 0;
    a.why.clear();
    a.requested = 0;
    MURMUR_LOG(kInfo) << "node " << env_.self() << ": artifact " << DescribeArtifact(m.artifact)
                      << ": fetching " << st.chunks_total() - st.chunks_have() << " chunks from "
                      << a.sources.size() << " daemons";
  }
  if (a.sources.empty()) {
    Stop(a, "no daemon to fetch it from");
  } else {
    Pump(a);
  }
  return StateOf(&a, name);
}

Result<proto::ArtifactState> ArtifactFetcher::Update(const std::string& blake2b,
                                                     std::vector<NodeId> sources) {
  auto it = active_.find(blake2b);
  if (it == active_.end()) {
    proto::ArtifactState st = store_.State(blake2b);
    if (st.complete()) return st;
    return Status::FailedPrecondition(
        "artifact " + blake2b.substr(0, 16) +
        "... is not being fetched here (an artifact_fetch with its offer comes first)");
  }
  Active& a = it->second;
  // A stopped fetch starts again only for sources it has not tried.
  if (SetSources(a, std::move(sources)) && a.stopped && !a.sources.empty())
    return Fetch(a.manifest, a.sources);
  if (a.sources.empty()) {
    Stop(a, "no daemon to fetch it from");
  } else if (!a.stopped) {
    Pump(a);
  }
  return StateOf(&a, blake2b);
}

proto::ArtifactState ArtifactFetcher::StateOf(const Active* a, const std::string& blake2b) const {
  proto::ArtifactState st = store_.State(blake2b);
  if (a == nullptr || st.complete()) return st;
  if (a->stopped)
    st.set_note("the fetch stopped: " + a->why);
  else if (!a->sources.empty())
    st.set_note("fetching from node " + std::to_string(a->sources[a->at]) +
                (a->why.empty() ? "" : " (" + a->why + ")"));
  return st;
}

void ArtifactFetcher::Pump(Active& a) {
  const proto::ArtifactState st = store_.State(a.manifest.artifact.blake2b());
  const std::uint64_t have = st.chunks_have(), total = a.manifest.digests.size();
  a.requested = std::max(a.requested, have);
  auto hash = HashFromHex(a.manifest.artifact.blake2b());
  while (hash.ok() && a.requested < total && a.requested - have < options_.window) {
    const auto count = static_cast<std::uint32_t>(std::min<std::uint64_t>(
        {kMaxChunksPerRequest, options_.window - (a.requested - have), total - a.requested}));
    env_.Send(a.sources[a.at], std::make_shared<ArtifactRequestMessage>(
                                   *hash, a.requested, a.manifest.artifact.chunk_bytes(), count));
    a.requested += count;
  }
  Arm(a);
}

void ArtifactFetcher::Arm(Active& a) {
  if (a.timer != 0) env_.CancelTimer(a.timer);
  const std::string name = a.manifest.artifact.blake2b();
  a.timer = env_.StartTimer(options_.stall, [this, name] {
    auto it = active_.find(name);
    if (it == active_.end()) return;
    it->second.timer = 0;
    NextSource(
        it->second,
        "node " + std::to_string(it->second.sources[it->second.at]) + " sent nothing for " +
            std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(options_.stall).count()) +
            " ms");
  });
}

void ArtifactFetcher::Stop(Active& a, std::string why) {
  a.stopped = true;
  a.why = std::move(why);
  if (a.timer != 0) env_.CancelTimer(a.timer);
  a.timer = 0;
}

void ArtifactFetcher::NextSource(Active& a, std::string why) {
  MURMUR_LOG(kInfo) << "node " << env_.self() << ": artifact " << DescribeArtifact(a.manifest.artifact)
                    << ": " << why;
  a.why = std::move(why);
  ++a.switches;
  if (a.sources.empty() || a.switches >= options_.max_rounds * static_cast<int>(a.sources.size())) {
    Stop(a, a.why);
    MURMUR_LOG(kWarning) << "node " << env_.self() << ": artifact " << DescribeArtifact(a.manifest.artifact)
                         << ": the fetch stopped after every source failed " << options_.max_rounds
                         << " times; the last: " << a.why;
    return;
  }
  a.at = (a.at + 1) % a.sources.size();
  a.requested = 0;  // ask the next source from the first chunk missing
  Pump(a);
}

void ArtifactFetcher::OnChunk(NodeId from, const ArtifactChunkMessage& chunk) {
  auto it = active_.find(HashHex(chunk.hash()));
  if (it == active_.end()) return;  // not fetching it (late, or unasked): ignored
  Active& a = it->second;
  if (a.stopped || a.sources.empty() || from != a.sources[a.at]) return;
  if (chunk.missing()) return NextSource(a, "node " + std::to_string(from) + " has no complete copy");
  auto st = store_.Put(a.manifest.artifact.blake2b(), chunk.index(), crypto::AsBytes(chunk.data()));
  if (!st.ok()) {
    // A chunk out of order (one lost before it) waits for the stall to ask again.
    if (st.status().code() == StatusCode::kFailedPrecondition) return;
    return NextSource(a, "node " + std::to_string(from) + ": " + st.status().message());
  }
  bytes_fetched_ += chunk.data().size();
  a.switches = 0;
  a.why.clear();
  if (st->complete()) {
    MURMUR_LOG(kInfo) << "node " << env_.self() << ": artifact " << DescribeArtifact(a.manifest.artifact)
                      << " fetched and verified";
    if (a.timer != 0) env_.CancelTimer(a.timer);
    active_.erase(it);
    return;
  }
  Pump(a);
}

}  // namespace murmur::node
