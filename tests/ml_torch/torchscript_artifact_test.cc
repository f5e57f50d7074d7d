// Artifacts on murmurd (docs/daemon.md "Artifacts"): eight daemons that have
// never seen a TorchScript job's model file receive it from the operator in
// chunks, verify it and train; one cut off in the middle of its transfer
// resumes where it stopped; a chunk altered on the way and a stored copy
// altered on disk are refused naming both hashes; a second job of the same
// model moves no bytes.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>

#include "node/artifacts/offer.h"
#include "tests/node/fed_fleet.h"

namespace murmur::node {
namespace {

namespace fs = std::filesystem;
using testing::FedFleet;

const std::string kModel = std::string(MURMUR_TORCH_FIXTURES) + "/bn_dropout.pt";
constexpr NodeId kDaemons = 8;
constexpr std::uint32_t kChunk = 4096;  // the 24 kB module in 6 chunks

proto::JobConfig ArtifactJob(const std::string& id, const ArtifactManifest& m) {
  proto::JobConfig job;
  job.set_job_id(id);
  proto::JobSpec& s = *job.mutable_spec();
  s.set_dataset("synthetic:blobs");
  s.set_model("torchscript:model.pt");  // in no daemon's data_dir
  s.set_model_blake2b(m.artifact.blake2b());
  s.set_nodes(kDaemons);
  s.set_topology("ring");
  s.set_rounds(20);
  s.set_lr(0.05);
  s.set_compression("none");
  s.set_round_timeout(30);
  s.set_eval_every(10);
  job.set_checkpoint_every(10);
  *job.add_artifacts() = m.artifact;
  return job;
}

struct Operator {
  const FedFleet& fleet;
  std::unique_ptr<ControlSession> Session(NodeId i) const {
    auto op = testing::Creds(fleet.coordinator, 77, "fleet", 3600, crypto::kRoleOperator);
    auto s = ControlSession::Open(fleet.Control(i), op, testing::Policy(fleet.coordinator),
                                  std::chrono::seconds(10));
    REQUIRE_MESSAGE(s.ok(), s.status().ToString());
    return std::move(s).value();
  }
  OfferReport Offer(NodeId i, const LocalArtifact& file,
                    std::uint64_t max_chunks = std::numeric_limits<std::uint64_t>::max()) const {
    auto session = Session(i);
    auto r = OfferArtifact(*session, file, std::chrono::seconds(10), max_chunks);
    REQUIRE_MESSAGE(r.ok(), r.status().ToString());
    return *r;
  }
};

}  // namespace

TEST_CASE(
    "A TorchScript job reaches 8 daemons that lack its model file: fetched in chunks, verified, resumed, "
    "trained") {
  FedFleet fleet(kDaemons);
  const Operator op{fleet};
  const LocalArtifact file{DescribeArtifactFile(kModel, "model.pt", kChunk).value(), kModel};
  const std::uint64_t chunks = file.manifest.digests.size();
  REQUIRE(chunks == 6);

  // Without the file, the job is refused, naming what is missing.
  proto::ControlRequest submit;
  *submit.mutable_submit()->mutable_job() = ArtifactJob("art1", file.manifest);
  auto refused = fleet.Call(0, submit);
  REQUIRE(refused.ok());
  CHECK_FALSE(refused->ok());
  CHECK(refused->error().find("is not in this daemon's store") != std::string::npos);

  // Daemon 3's transfer breaks after 2 chunks (its session dropped).
  CHECK(op.Offer(3, file, 2).chunks_sent == 2);
  // A chunk altered on the way to daemon 5 is refused, naming both digests.
  {
    auto session = op.Session(5);
    CHECK(op.Offer(5, file, 0).chunks_had == 0);
    std::ifstream in(kModel, std::ios::binary);
    std::string first(kChunk, '\0');
    in.read(first.data(), kChunk);
    first[17] ^= 0x20;
    proto::ControlRequest put;
    put.mutable_artifact_put()->set_blake2b(file.manifest.artifact.blake2b());
    put.mutable_artifact_put()->set_index(0);
    put.mutable_artifact_put()->set_data(first);
    auto r = session->Call(put, std::chrono::seconds(10));
    REQUIRE(r.ok());
    CHECK_FALSE(r->ok());
    CHECK(r->error().find("has BLAKE2b-256 " +
                          crypto::ToHex(crypto::AsBytes(ChunkDigest(crypto::AsBytes(first))))) !=
          std::string::npos);
    CHECK(r->error().find("the offer's digest for it is " +
                          crypto::ToHex(crypto::AsBytes(file.manifest.digests[0]))) != std::string::npos);
  }
  // The operator offers it to all: daemon 3 resumes at chunk 2, the others start at 0.
  for (NodeId i = 0; i < kDaemons; ++i) {
    CAPTURE(i);
    const OfferReport r = op.Offer(i, file);
    CHECK(r.complete);
    CHECK(r.chunks_had == (i == 3 ? 2u : 0u));
    CHECK(r.chunks_sent == chunks - r.chunks_had);
  }
  fleet.SubmitAll(ArtifactJob("art1", file.manifest));
  REQUIRE(fleet.WaitDone(std::chrono::seconds(180)));
  for (NodeId i = 0; i < kDaemons; ++i) {
    CAPTURE(i);
    const fs::path stored = fleet.root / std::string("n").append(std::to_string(i)) / "artifacts" /
                            file.manifest.artifact.blake2b();
    CHECK(fs::file_size(stored) == fs::file_size(kModel));
    CHECK_FALSE(fs::exists(fleet.root / std::string("n").append(std::to_string(i)) / "model.pt"));
    CHECK(fleet.Status(i).test_accuracy() > 0.5);  // 10 blobs: chance 0.10
  }

  // A second job of the same model: every daemon has it, no chunk moves.
  for (NodeId i = 0; i < kDaemons; ++i) {
    const OfferReport r = op.Offer(i, file);
    CHECK(r.complete);
    CHECK(r.chunks_sent == 0);
  }
  // Daemon 6's stored copy is altered on disk: its prepare names both hashes.
  const fs::path six = fleet.root / "n6" / "artifacts" / file.manifest.artifact.blake2b();
  {
    std::fstream f(six, std::ios::binary | std::ios::in | std::ios::out);
    f.seekp(100);
    f.put('\x55');
  }
  const std::string altered = DescribeArtifactFile(six.string(), "x", kChunk).value().artifact.blake2b();
  REQUIRE(altered != file.manifest.artifact.blake2b());
  proto::ControlRequest prepare;
  *prepare.mutable_prepare()->mutable_job() = ArtifactJob("art2", file.manifest);
  auto six_says = fleet.Call(6, prepare);
  REQUIRE(six_says.ok());
  CHECK_FALSE(six_says->ok());
  CHECK(six_says->error().find("has BLAKE2b " + altered + ", not its name " +
                               file.manifest.artifact.blake2b()) != std::string::npos);
  // Offered again, daemon 6 fetches it afresh and takes the job.
  CHECK(op.Offer(6, file).chunks_sent == chunks);
  auto again = fleet.Call(6, prepare);
  REQUIRE(again.ok());
  CHECK_MESSAGE(again->ok(), again->error());
}

}  // namespace murmur::node
