// murmurd's runtime in one process: config errors, checkpoints, a 4-daemon
// D-PSGD job on loopback compared with the same job in the simulator, resume
// after a restart of the job, local data, and a drain on a stop request. The
// other gossip algorithms: daemon_algorithms_test.cc.
#include <doctest/doctest.h>
#include <zlib.h>

#include <unistd.h>

#include <bit>
#include <filesystem>
#include <fstream>
#include <functional>
#include <thread>

#include "crypto/certificate.h"
#include "engine/model_factory.h"
#include "gossip/decentralized_sgd.h"
#include "ml/dataset_spec.h"
#include "ml/idx.h"
#include "ml/ml_learner.h"
#include "ml/model_spec.h"
#include "ml/partition.h"
#include "node/config.h"
#include "node/daemon.h"
#include "node/job/checkpoint.h"
#include "node/job/gossip_job.h"
#include "node/job/job.h"
#include "node/job/job_data.h"
#include "node/job/job_store.h"
#include "sim/net/simulator.h"
#include "sim/run/scenario.h"
#include "sim/run/world.h"
#include "sim/runner.h"
#include "tests/node/daemon_cluster.h"
#include "tests/node/loopback.h"
#include "topology/factory.h"

namespace murmur::node {
namespace {

namespace fs = std::filesystem;
using testing::Cluster;
using testing::NodeDir;
using testing::Simulate;

TEST_CASE("A config with a misspelled field is refused by name, in text and in JSON") {
  auto text = ParseNodeConfig("node_id: 1\nnetwrok_id: \"fleet\"\n", "cfg");
  REQUIRE_FALSE(text.ok());
  CHECK(text.status().message().find("netwrok_id") != std::string::npos);
  auto json = ParseNodeConfig(R"({"nodeId": 1, "job": {"rounds": 5, "lr_rate": 0.1}})", "cfg");
  REQUIRE_FALSE(json.ok());
  CHECK(json.status().message().find("lr_rate") != std::string::npos);
  // A job block in murmur 0.1's flat layout: the error says where its fields went.
  auto old = ParseNodeConfig("node_id: 1 job { algorithm: \"dsgt\" rounds: 5 }", "old.conf");
  REQUIRE_FALSE(old.ok());
  CHECK(old.status().message().find("0.1 layout: algorithm, rounds now belong in job { spec") !=
        std::string::npos);
  auto ok =
      ParseNodeConfig("node_id: 1 network_id: \"fleet\" coordinator_key: \"k\" data_dir: \"/tmp\"", "cfg");
  REQUIRE(ok.ok());
  CHECK(ValidateNodeConfig(*ok).ok());
  ok->mutable_job()->mutable_spec()->set_nodes(4);
  CHECK(ValidateJobConfig(ok->job(), 1).ok());
  CHECK(ValidateJobConfig(ok->job(), 4).message().find("node_id 4") != std::string::npos);
  ok->mutable_job()->mutable_spec()->set_algorithm("fedsgd");
  CHECK(ValidateJobConfig(ok->job(), 1).message().find("fedsgd") != std::string::npos);
  ok->mutable_job()->mutable_spec()->set_algorithm(
      "fedavg");  // a federated job: aggregator 0, clients 1 .. 4
  ok->mutable_job()->mutable_spec()->set_clients_per_round(0);
  CHECK(ValidateJobConfig(ok->job(), 4).ok());
  CHECK(ValidateJobConfig(ok->job(), 5).message().find("node_id 5") != std::string::npos);
  ok->mutable_job()->mutable_spec()->set_algorithm("dpsgd");
  ok->mutable_job()->set_job_id("a b");
  CHECK(ValidateJobConfig(ok->job(), 1).message().find("job_id") != std::string::npos);
  CHECK(ParseHostPort("[::1]:7001")->host == "::1");
  CHECK(ParseHostPort("127.0.0.1:7001")->port == 7001);
  CHECK_FALSE(ParseHostPort("::1:7001").ok());
  CHECK_FALSE(ParseHostPort("127.0.0.1:70001").ok());
  CHECK_FALSE(ParseHostPort("[[]:1").ok());  // host "[" would format as "[:1", which reads back as nothing
  CHECK_FALSE(ParseHostPort("a]:1").ok());
}

TEST_CASE("Checkpoints round-trip and every damaged file is refused") {
  Checkpoint c;
  c.round = 42;
  c.params = {1.5f, -2.0f, 3.25f};
  c.algorithm = "push-sum none";
  c.job_id = "job-7";
  c.job_tag = 0x0123456789abcdefULL;
  c.vectors["x"] = {0.5f, 1e-30f, -7.0f};
  c.vectors["sent/3"] = {1.0f, 2.0f, 3.0f};
  c.scalars["w"] = 0.1;  // not exact in binary: must come back bit for bit
  c.scalars["learner/batches"] = 12345;
  c.wide["server/rdp"] = {0.1, 1e-300, 2.0 / 3, 5e9, -0.0};  // not the model's size, not floats
  auto bytes = EncodeCheckpoint(c);
  // Header 24, params 12, algorithm 4+13, job id 4+5, job tag 8, vector
  // count 4, two vectors (4+1+8+12, 4+6+8+12), scalar count 4, two scalars
  // (4+1+8, 4+15+8), wide count 4, one wide vector (4+10+8+40), CRC 4.
  CHECK(bytes.size() == 24 + 12 + 17 + 9 + 8 + 4 + 25 + 30 + 4 + 13 + 27 + 4 + 62 + 4);
  auto back = DecodeCheckpoint(bytes, 3);
  REQUIRE(back.ok());
  CHECK(back->round == 42);
  CHECK(back->params == c.params);
  CHECK(back->algorithm == c.algorithm);
  CHECK(back->job_id == c.job_id);
  CHECK(back->job_tag == c.job_tag);
  CHECK(back->vectors == c.vectors);
  CHECK(back->scalars == c.scalars);
  REQUIRE(back->wide.count("server/rdp") == 1);
  for (std::size_t k = 0; k < 5; ++k)
    CHECK(std::bit_cast<std::uint64_t>(back->wide["server/rdp"][k]) ==
          std::bit_cast<std::uint64_t>(c.wide["server/rdp"][k]));
  CHECK(DecodeCheckpoint(bytes, 4).status().code() == StatusCode::kFailedPrecondition);
  // Version 3 is version 4 without the job id and tag (written before a
  // job had its own checkpoint), version 2 is version 3 without the wide
  // vectors; both are read as before, with no owner.
  Checkpoint narrow = c;
  narrow.wide.clear();
  narrow.job_id.clear();
  narrow.job_tag = 0;
  auto older = [&](int version) {
    std::vector<std::uint8_t> b = EncodeCheckpoint(narrow);
    const std::size_t owner = 24 + 12 + 17;  // the empty job id (4) and the tag (8) follow the algorithm
    b.erase(b.begin() + owner, b.begin() + owner + 12);
    b.resize(b.size() - (version == 2 ? 8 : 4));  // the CRC, for version 2 also the wide count
    b[4] = static_cast<std::uint8_t>(version);
    const auto crc =
        static_cast<std::uint32_t>(crc32(crc32(0L, Z_NULL, 0), b.data(), static_cast<uInt>(b.size())));
    for (int k = 0; k < 4; ++k) b.push_back(static_cast<std::uint8_t>(crc >> (8 * k)));
    return b;
  };
  for (int version : {2, 3}) {
    CAPTURE(version);
    auto old = DecodeCheckpoint(older(version), 3);
    REQUIRE_MESSAGE(old.ok(), old.status().ToString());
    CHECK(old->round == 42);
    CHECK(old->algorithm == c.algorithm);
    CHECK(old->job_id.empty());
    CHECK(old->job_tag == 0);
    CHECK(old->vectors == c.vectors);
    CHECK(old->scalars == c.scalars);
    CHECK(old->wide.empty());
    CHECK(CheckCheckpointOwner(*old, "f", "any", 99).ok());  // no owner: taken by the job of its place
  }
  // A checkpoint is its owner's only: another job id, or the same id with
  // another configuration (tag), is refused by name.
  CHECK(CheckCheckpointOwner(*back, "f", "job-7", c.job_tag).ok());
  CHECK(CheckCheckpointOwner(*back, "f", "job-8", c.job_tag)
            .message()
            .find("belongs to job 'job-7', not to job 'job-8'") != std::string::npos);
  CHECK(CheckCheckpointOwner(*back, "f", "job-7", 1).message().find("configuration changed") !=
        std::string::npos);
  // A wide vector longer than max(n, kMaxCheckpointWide) is refused before it is read.
  std::vector<std::uint8_t> huge = EncodeCheckpoint(narrow);
  huge.resize(huge.size() - 8);
  for (int b : {1, 0, 0, 0, 1, 0, 0, 0, int{'w'}}) huge.push_back(static_cast<std::uint8_t>(b));
  for (int k = 0; k < 8; ++k) huge.push_back(k == 2 ? 0x20 : 0);  // 2^21 elements
  const auto crc2 =
      static_cast<std::uint32_t>(crc32(crc32(0L, Z_NULL, 0), huge.data(), static_cast<uInt>(huge.size())));
  for (int k = 0; k < 4; ++k) huge.push_back(static_cast<std::uint8_t>(crc2 >> (8 * k)));
  CHECK(DecodeCheckpoint(huge, 3).status().message().find("wide vector 'w' has 2097152 elements") !=
        std::string::npos);
  for (std::size_t cut : {std::size_t{0}, std::size_t{10}, std::size_t{40}, bytes.size() - 1}) {
    CHECK_FALSE(DecodeCheckpoint(std::span(bytes).first(cut), 3).ok());
  }
  for (std::size_t i = 8; i < bytes.size(); ++i) {  // any flipped bit past magic and version fails the CRC
    auto bad = bytes;
    bad[i] ^= 0x04;
    CAPTURE(i);
    CHECK(DecodeCheckpoint(bad, 3).status().code() == StatusCode::kDataLoss);
  }
}

TEST_CASE(
    "A checkpoint's owner tag leaves out the rounds, and the topology unless the state holds what the "
    "neighbours sent (CHOCO)") {
  auto tag = [](const std::string& algorithm, const std::string& compression, const std::string& topology,
                std::uint64_t rounds) {
    proto::JobConfig job;
    job.set_job_id("j");
    job.mutable_spec()->set_algorithm(algorithm);
    job.mutable_spec()->set_compression(compression);
    job.mutable_spec()->set_topology(topology);
    job.mutable_spec()->set_rounds(rounds);
    return OwnerTag(job);
  };
  CHECK(tag("dpsgd", "none", "ring", 10) == tag("dpsgd", "none", "ring", 99));
  // Whole models (also coded), push-sum, DSGT, an all-reduce: any graph.
  for (const auto& [a, c] : {std::pair<std::string, std::string>{"dpsgd", "none"},
                             {"dpsgd", "int8"},
                             {"diloco", "fp16"},
                             {"push-sum", "none"},
                             {"dsgt", "none"},
                             {"diloco-allreduce", "powersgd:2"}}) {
    CAPTURE(a);
    CAPTURE(c);
    CHECK(tag(a, c, "ring", 10) == tag(a, c, "edges:0 1;1 2;2 0", 20));
  }
  // CHOCO's public copies belong to the graph they were mixed on.
  for (const std::string c : {"topk:0.01", "int8,choco", "default"}) {
    CAPTURE(c);
    CHECK(tag("dpsgd", c, "ring", 10) != tag("dpsgd", c, "edges:0 1;1 2;2 0", 10));
  }
  // Any other change still makes another job.
  CHECK(tag("dpsgd", "none", "ring", 10) != tag("dpsgd", "fp16", "ring", 10));
}

TEST_CASE("A version 1 checkpoint and a foreign file are refused with errors that say what they are") {
  // Version 1: magic, version, round, n, params, CRC (murmurd before state checkpoints).
  std::vector<std::uint8_t> v1 = {'M', 'C', 'K', 'P', 1, 0, 0, 0};
  v1.resize(24 + 4 + 4, 0);
  v1[16] = 1;
  auto old = DecodeCheckpoint(v1, 1);
  CHECK(old.status().code() == StatusCode::kInvalidArgument);
  CHECK(old.status().message().find("version 1") != std::string::npos);
  CHECK(old.status().message().find("remove the file") != std::string::npos);
  std::vector<std::uint8_t> future = EncodeCheckpoint(Checkpoint{});
  future[4] = 5;
  CHECK(DecodeCheckpoint(future, 0).status().message().find("version 5 is not 2 to 4") != std::string::npos);
  const std::string text = "job { algorithm: 'dpsgd' }";
  auto foreign =
      DecodeCheckpoint(std::span(reinterpret_cast<const std::uint8_t*>(text.data()), text.size()), 1);
  CHECK(foreign.status().message().find("not a murmur checkpoint") != std::string::npos);
}

TEST_CASE(
    "Four daemons on loopback run D-PSGD to the same models as the simulator, a restarted job resumes") {
  Cluster cluster;
  const std::uint64_t rounds = 20;
  std::vector<std::uint64_t> done;
  auto real = cluster.RunAll(rounds, &done);
  auto simulated = Simulate(cluster.Config(0, rounds));
  for (NodeId i = 0; i < Cluster::kNodes; ++i) {
    CAPTURE(i);
    CHECK(done[i] == rounds);
    CHECK(real[i] == simulated[i]);
    auto ckpt = LoadCheckpoint(testing::JobCheckpoint(cluster.Config(i, rounds).data_dir()), real[i].size());
    REQUIRE(ckpt.ok());
    CHECK(ckpt->round == rounds);
    CHECK(ckpt->params == real[i]);
  }
  // Test accuracy of node 0's model on the synthetic blobs.
  auto data = ml::LoadDatasetSpec("synthetic:blobs", "", 1).value();
  auto model = ml::MakeModel("softmax", data.train.dim, data.train.num_classes).value();
  ParamVector x(model->layout());
  std::copy(real[0].begin(), real[0].end(), x.data());
  auto ws = model->NewWorkspace();
  const double acc = model->Evaluate(x, data.test, *ws).accuracy;
  MESSAGE("accuracy after 20 rounds: " << acc);
  CHECK(acc > 0.5);

  // The whole job restarts with 10 more rounds: every daemon resumes at round 20.
  done.clear();
  auto more = cluster.RunAll(rounds + 10, &done);
  for (NodeId i = 0; i < Cluster::kNodes; ++i) {
    CHECK(done[i] == rounds + 10);
    CHECK(more[i] != real[i]);
  }
}

TEST_CASE(
    "A config job with a new job_id starts at round 0 beside another job's checkpoint, its old id changed or "
    "completed is refused") {
  Cluster cluster;
  const auto first = cluster.RunAll(10);  // job "job"
  cluster.job_tweak = [](proto::JobConfig& job) {
    job.set_job_id("other");
    job.mutable_spec()->set_lr(0.02);
  };
  std::vector<std::uint64_t> done;
  const auto other = cluster.RunAll(10, &done);
  const auto simulated = Simulate(cluster.Config(0, 10));  // "other" from round 0
  for (NodeId i = 0; i < Cluster::kNodes; ++i) {
    CAPTURE(i);
    CHECK(done[i] == 10);
    CHECK(other[i] == simulated[i]);
    CHECK(other[i] != first[i]);
    // Each job keeps its own checkpoint, which names it.
    const std::string dir = (cluster.root / NodeDir(i)).string();
    auto mine = LoadCheckpoint(testing::JobCheckpoint(dir, "job"), first[i].size());
    auto theirs = LoadCheckpoint(testing::JobCheckpoint(dir, "other"), other[i].size());
    REQUIRE(mine.ok());
    REQUIRE(theirs.ok());
    CHECK(mine->params == first[i]);
    CHECK(mine->job_id == "job");
    CHECK(theirs->params == other[i]);
    CHECK(theirs->job_id == "other");
  }
  auto run = [&](std::uint64_t rounds) {
    auto d = Daemon::Create(cluster.Config(0, rounds));
    return d.ok() ? (*d)->Run() : d.status();
  };
  // "job" again with another learning rate: its checkpoint is the old job's.
  cluster.job_tweak = [](proto::JobConfig& job) { job.mutable_spec()->set_lr(0.02); };
  Status changed = run(20);
  CHECK_MESSAGE(
      changed.message().find("belongs to job 'job' as it was configured before") != std::string::npos,
      changed.ToString());
  CHECK(changed.message().find("give the changed job a new job_id") != std::string::npos);
  // "job" completed (after which "other" ran): with its checkpoint gone it is
  // not run again from round 0.
  cluster.job_tweak = {};
  fs::remove(testing::JobCheckpoint((cluster.root / NodeDir(0)).string(), "job"));
  Status again = run(10);
  CHECK_MESSAGE(again.message().find("job 'job' already completed on this daemon") != std::string::npos,
                again.ToString());
}

TEST_CASE("Gossip daemons train on non-IID shares: the job's partition, or each daemon's local data") {
  // (1) The job's partition dirichlet:0.5 over synthetic blobs; (2) the job names blobs,
  // but each daemon's config says data "fashion-mnist:shards:2:part=i/4": the daemons
  // must train exactly the models the simulator trains on murmur sim's shards of
  // Fashion-MNIST (the blobs model would not even have the same size).
  const std::uint64_t rounds = 6;
  for (bool local : {false, true}) {
    CAPTURE(local);
    Cluster cluster;
    cluster.tweak = [local](NodeId i, proto::NodeConfig& c) {
      if (local) {
        c.set_data("fashion-mnist:shards:2:part=" + std::to_string(i) + "/4");
        c.set_dataset_dir(ml::kFashionMnistDir);
      } else {
        c.mutable_job()->mutable_spec()->set_partition("dirichlet:0.5");
      }
    };
    std::vector<std::uint64_t> done;
    auto real = cluster.RunAll(rounds, &done);
    auto simulated = local ? Simulate(cluster.Config(0, rounds), "fashion-mnist", "shards:2")
                           : Simulate(cluster.Config(0, rounds));
    REQUIRE(simulated[0].size() == (local ? 7850u : 210u));
    for (NodeId i = 0; i < Cluster::kNodes; ++i) {
      CAPTURE(i);
      CHECK(done[i] == rounds);
      CHECK(real[i] == simulated[i]);
    }
  }
}

TEST_CASE("Local data specs are checked when the config is read") {
  for (const char* bad :
       {"fashion-mnist:iid:part=4/4", "fashion-mnist:iid:part=1", "fashion-mnist:zipf:1:part=0/2",
        "fashion-mnist:dirichlet:x:part=0/2", "fashion-mnist:iid:part=-1/2"}) {
    CAPTURE(bad);
    Status st = CheckLocalData(bad);
    CHECK(st.code() == StatusCode::kInvalidArgument);
    CHECK(st.message().find("config field 'data'") != std::string::npos);
  }
  CHECK(CheckLocalData("fashion-mnist:dirichlet:0.5:part=3/8").ok());
  CHECK(CheckLocalData("csv:/data/mine.csv").ok());
}

TEST_CASE("Local data given as a CSV path is that file whole and a missing file fails naming it") {
  // 10 rows of label, x: the 80% kept for training are 8 of them, each x = 10 * label.
  const fs::path csv = fs::temp_directory_path() /
                       std::string("murmur_local_").append(std::to_string(::getpid())).append(".csv");
  {
    std::ofstream out(csv);
    for (int i = 0; i < 10; ++i) out << i % 3 << "," << 10 * (i % 3) << "\n";
  }
  proto::JobConfig job;
  job.mutable_spec()->set_model("softmax");
  auto whole = LoadJobData(job, LocalData{csv.string(), "", "", ""}, 4, 2);
  REQUIRE_MESSAGE(whole.ok(), whole.status().ToString());
  CHECK(whole->data.train.num_samples == 8);
  CHECK(whole->data.test.num_samples == 2);
  for (std::int64_t i = 0; i < 8; ++i)
    CHECK(whole->data.train.features[static_cast<std::size_t>(i * whole->data.train.dim)] ==
          10.0f * whole->data.train.labels[i]);
  auto spec = LoadJobData(job, LocalData{"csv:" + csv.string(), "", "", ""}, 4, 2);
  REQUIRE(spec.ok());
  CHECK(spec->data.train.features == whole->data.train.features);
  fs::remove(csv);
  auto missing = LoadJobData(job, LocalData{csv.string(), "", "", ""}, 4, 2);
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.status().message().find("config field 'data'") != std::string::npos);
  CHECK(missing.status().message().find(csv.filename().string()) != std::string::npos);
}

TEST_CASE("A daemon refuses a TorchScript job whose model file differs from the job's, naming both hashes") {
  const fs::path dir = fs::temp_directory_path() / ("murmur_model_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const fs::path file = dir / "model.pt";
  std::ofstream(file) << "abc";
  // BLAKE2b-512("abc"), RFC 7693 appendix A: what `b2sum` prints for the daemon's copy.
  const std::string ours =
      "ba80a53f981c4d0d6a2797b69f12f6e94c212f14685ac4b74b12bb6fdbffa2d1"
      "7d87c5392aab792dc252d5de4533cc9518d38aa8dbf1925ab92386edd4009923";
  CHECK(engine::ModelFileBlake2b(file.string()).value() == ours);
  const std::string theirs(128, 'e');  // the job's file is another one
  proto::JobConfig job;
  job.mutable_spec()->set_dataset("synthetic:blobs");
  job.mutable_spec()->set_model("torchscript:model.pt");  // relative: in the daemon's data_dir
  job.mutable_spec()->set_model_blake2b(theirs);
  auto refused = LoadJobData(job, LocalData{"", "", dir.string(), ""}, 4, 0);
  REQUIRE_FALSE(refused.ok());
  const std::string& why = refused.status().message();
  CHECK(why.find("model file '" + file.string() + "' has BLAKE2b " + ours) != std::string::npos);
  CHECK(why.find("the job's spec field 'model_blake2b' is " + theirs) != std::string::npos);
  // Without a hash the job is refused too: every daemon must train the same file.
  job.mutable_spec()->clear_model_blake2b();
  auto unhashed = LoadJobData(job, LocalData{"", "", dir.string(), ""}, 4, 0);
  REQUIRE_FALSE(unhashed.ok());
  CHECK(unhashed.status().message().find("spec field 'model_blake2b' is required") != std::string::npos);
  // With the file's own hash the check passes and the file is loaded ("abc" is no TorchScript archive).
  job.mutable_spec()->set_model_blake2b(ours);
  auto loaded = LoadJobData(job, LocalData{"", "", dir.string(), ""}, 4, 0);
  REQUIRE_FALSE(loaded.ok());
  CHECK(loaded.status().message().find("model_blake2b") == std::string::npos);
  CHECK((loaded.status().message().find("is not a TorchScript archive") != std::string::npos ||
         loaded.status().message().find("built without LibTorch") != std::string::npos));
  fs::remove_all(dir);
}

TEST_CASE("A stop request drains: the daemon returns, and its checkpoint holds the last completed round") {
  Cluster cluster;
  // Node 0 alone: its neighbours never come, so each round waits out its timeout.
  auto config = cluster.Config(0, 1000);
  config.mutable_job()->mutable_spec()->set_round_timeout(0.2);
  config.set_drain_timeout(5);
  auto d = Daemon::Create(config);
  REQUIRE(d.ok());
  std::thread t([&] { CHECK((*d)->Run().ok()); });
  REQUIRE(testing::WaitFor([&] { return (*d)->rounds_done() >= 2; }));
  const auto start = std::chrono::steady_clock::now();
  (*d)->RequestStop();
  t.join();
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(3));
  auto ckpt = LoadCheckpoint(testing::JobCheckpoint(config.data_dir()), (*d)->params().size());
  REQUIRE(ckpt.ok());
  CHECK(ckpt->round == (*d)->rounds_done());
  CHECK(ckpt->round < 1000);
  CHECK(ckpt->params == (*d)->params());
}

}  // namespace
}  // namespace murmur::node
