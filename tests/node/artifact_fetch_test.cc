// Daemons fetch artifacts from each other (docs/daemon.md "Artifacts", "From
// other daemons"): the operator uploads a file to one daemon and the others
// fetch it from the daemons that hold it, each chunk checked; a daemon told
// to fetch from one that has no copy stops, says why, and the operator's
// upload takes over; the peer messages' decoders refuse malformed input.
#include <doctest/doctest.h>

#include <fstream>

#include "node/artifacts/distribute.h"
#include "node/artifacts/messages.h"
#include "tests/node/fed_fleet.h"

namespace murmur::node {
namespace {

using testing::FedFleet;

std::string Noise(std::size_t n) {
  std::string s(n, '\0');
  std::uint64_t x = 88172645463325252ull;
  for (char& c : s) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    c = static_cast<char>(x);
  }
  return s;
}

LocalArtifact MakeFile(const FedFleet& fleet, std::size_t bytes) {
  const std::string path = (fleet.root / "model.bin").string();
  std::ofstream(path, std::ios::binary) << Noise(bytes);
  return LocalArtifact{DescribeArtifactFile(path, "model.bin", 16384).value(), path};
}

std::vector<FleetDaemon> Daemons(const FedFleet& fleet) {
  std::vector<FleetDaemon> out;
  for (NodeId i = 0; i < fleet.nodes; ++i) out.push_back({fleet.Control(i), i});
  return out;
}

// The operator's DistributeArtifact over the whole fleet, polling every 50 ms.
DistributeReport Distribute(const FedFleet& fleet, const LocalArtifact& file) {
  auto op = testing::Creds(fleet.coordinator, 77, "fleet", 3600, crypto::kRoleOperator);
  DistributeOptions o;
  o.poll = std::chrono::milliseconds(50);
  auto r = DistributeArtifact(Daemons(fleet), op, testing::Policy(fleet.coordinator), file, o);
  REQUIRE_MESSAGE(r.ok(), r.status().ToString());
  return *r;
}

double Metric(const FedFleet& fleet, NodeId i, const std::string& name) {
  proto::ControlRequest r;
  r.mutable_metrics();
  auto m = fleet.Call(i, r);
  REQUIRE(m.ok());
  const std::string& text = m->metrics();
  const auto at = text.find("\n" + name + " ");
  REQUIRE(at != std::string::npos);
  return std::stod(text.substr(at + name.size() + 2));
}

}  // namespace

TEST_CASE(
    "The operator uploads a file to one daemon and the other daemons fetch it from those that hold it") {
  FedFleet fleet(5);
  const LocalArtifact file = MakeFile(fleet, 40 * 16384 + 123);  // 41 chunks
  const DistributeReport r = Distribute(fleet, file);
  CHECK(r.had == 0);
  CHECK(r.uploaded == 1);
  CHECK(r.fetched == 4);
  CHECK(r.bytes_uploaded == file.manifest.artifact.bytes());
  double fetched = 0, served = 0;
  for (NodeId i = 0; i < fleet.nodes; ++i) {
    CAPTURE(i);
    std::ifstream in(fleet.root / std::string("n").append(std::to_string(i)) / "artifacts" /
                         file.manifest.artifact.blake2b(),
                     std::ios::binary);
    CHECK(std::string(std::istreambuf_iterator<char>(in), {}) == Noise(40 * 16384 + 123));
    fetched += Metric(fleet, i, "murmur_artifact_bytes_fetched_total");
    served += Metric(fleet, i, "murmur_artifact_chunks_served_total");
  }
  // The operator's uplink carried one copy; the daemons carried the other four.
  CHECK(fetched == 4.0 * static_cast<double>(file.manifest.artifact.bytes()));
  CHECK(served == 4.0 * 41);
  // Everyone has it now: nothing moves.
  const DistributeReport again = Distribute(fleet, file);
  CHECK(again.had == 5);
  CHECK(again.uploaded + again.fetched == 0);
}

TEST_CASE("A fetch from daemons without a copy stops and says why, and the operator's upload takes over") {
  FedFleet fleet(3);
  const LocalArtifact file = MakeFile(fleet, 5 * 16384);
  proto::ControlRequest fetch;
  *fetch.mutable_artifact_fetch()->mutable_offer() = OfferOf(file.manifest);
  // No source (itself left out): it stops at once, saying so, and a poll with none is no crash.
  fetch.mutable_artifact_fetch()->add_sources(0);
  auto alone = fleet.Call(0, fetch);
  REQUIRE(alone.ok());
  REQUIRE_MESSAGE(alone->ok(), alone->error());
  CHECK(alone->artifact().note() == "the fetch stopped: no daemon to fetch it from");
  proto::ControlRequest empty_poll;
  empty_poll.mutable_artifact_fetch()->set_blake2b(file.manifest.artifact.blake2b());
  auto still = fleet.Call(0, empty_poll);
  REQUIRE(still.ok());
  CHECK(still->artifact().note() == "the fetch stopped: no daemon to fetch it from");
  fetch.mutable_artifact_fetch()->clear_sources();
  fetch.mutable_artifact_fetch()->add_sources(1);
  fetch.mutable_artifact_fetch()->add_sources(2);
  auto started = fleet.Call(0, fetch);
  REQUIRE(started.ok());
  REQUIRE_MESSAGE(started->ok(), started->error());
  proto::ControlRequest poll;
  poll.mutable_artifact_fetch()->set_blake2b(file.manifest.artifact.blake2b());
  poll.mutable_artifact_fetch()->add_sources(1);
  poll.mutable_artifact_fetch()->add_sources(2);
  std::string note;
  REQUIRE(fleet.Poll(
      [&] {
        auto s = fleet.Call(0, poll);
        note = s.ok() && s->ok() ? s->artifact().note() : "";
        return note.rfind("the fetch stopped", 0) == 0;
      },
      std::chrono::seconds(45)));
  CAPTURE(note);
  CHECK(note.find("has no complete copy") != std::string::npos);
  // The operator's distribution finds no holder, uploads to one daemon, and
  // the others (daemon 0's stopped fetch among them) fetch from it.
  const DistributeReport r = Distribute(fleet, file);
  CHECK(r.uploaded == 1);
  CHECK(r.fetched == 2);
}

TEST_CASE("The artifact messages' decoders refuse malformed input and round-trip what they accept") {
  const DecoderTable table = ArtifactDecoders();
  RawHash h{};
  h[0] = 7;
  std::vector<std::uint8_t> bytes;
  ArtifactRequestMessage(h, 3, 16384, 8).EncodeTo(bytes);
  auto ok = table.at(kArtifactRequestKind)(bytes);
  REQUIRE(ok.ok());
  const auto& req = static_cast<const ArtifactRequestMessage&>(**ok);
  CHECK(req.index() == 3);
  CHECK(req.count() == 8);
  CHECK(req.hash() == h);
  std::vector<std::uint8_t> nine;
  ArtifactRequestMessage(h, 3, 16384, 9).EncodeTo(nine);
  CHECK(table.at(kArtifactRequestKind)(nine).status().message().find("9 chunks") != std::string::npos);
  std::vector<std::uint8_t> tiny;
  ArtifactRequestMessage(h, 3, 100, 1).EncodeTo(tiny);
  CHECK_FALSE(table.at(kArtifactRequestKind)(tiny).ok());
  bytes.pop_back();
  CHECK_FALSE(table.at(kArtifactRequestKind)(bytes).ok());

  std::vector<std::uint8_t> chunk;
  ArtifactChunkMessage(h, 5, "abc").EncodeTo(chunk);
  auto c = table.at(kArtifactChunkKind)(chunk);
  REQUIRE(c.ok());
  CHECK(static_cast<const ArtifactChunkMessage&>(**c).data() == "abc");
  std::vector<std::uint8_t> missing;
  ArtifactChunkMessage(h, 5, "").EncodeTo(missing);
  auto m = table.at(kArtifactChunkKind)(missing);
  REQUIRE(m.ok());
  CHECK(static_cast<const ArtifactChunkMessage&>(**m).missing());
  missing.push_back(1);  // "missing", yet with data
  CHECK_FALSE(table.at(kArtifactChunkKind)(missing).ok());
  chunk[72] = 2;
  CHECK_FALSE(table.at(kArtifactChunkKind)(chunk).ok());
  std::vector<std::uint8_t> huge(73 + kMaxArtifactChunkBytes + 1, 0);
  CHECK(table.at(kArtifactChunkKind)(huge).status().message().find("over") != std::string::npos);
}

}  // namespace murmur::node
