// murmurd's runtime in one process: config errors, checkpoints, a 4-daemon
// D-PSGD job on loopback compared with the same job in the simulator, resume
// after a restart of the job, and a drain on a stop request.
#include <doctest/doctest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <thread>

#include "crypto/certificate.h"
#include "gossip/decentralized_sgd.h"
#include "ml/dataset_spec.h"
#include "ml/idx.h"
#include "ml/ml_learner.h"
#include "ml/model_spec.h"
#include "ml/partition.h"
#include "node/checkpoint.h"
#include "node/config.h"
#include "node/daemon.h"
#include "node/gossip_algorithm.h"
#include "node/gossip_job.h"
#include "node/job.h"
#include "node/job_data.h"
#include "sim/runner.h"
#include "sim/scenario.h"
#include "sim/simulator.h"
#include "sim/world.h"
#include "tests/node/loopback.h"
#include "topology/factory.h"

namespace murmur::node {
namespace {

namespace fs = std::filesystem;

// Gossip learning on daemons vs murmur sim of the same job: the mean test
// accuracy of the final models may differ by this much. The run is
// asynchronous (wake-ups on the real clock, merges in arrival order), so it is
// one draw of a random process, not a replay; the tolerance is the simulator's
// own spread over seeds 1-5 of this job (measured 0.948-0.971, 0.023), rounded
// up, and the test checks that spread still fits in it.
constexpr double kGossipLearningTolerance = 0.03;

TEST_CASE("A config with a misspelled field is refused by name, in text and in JSON") {
  auto text = ParseNodeConfig("node_id: 1\nnetwrok_id: \"fleet\"\n", "cfg");
  REQUIRE_FALSE(text.ok());
  CHECK(text.status().message().find("netwrok_id") != std::string::npos);
  auto json = ParseNodeConfig(R"({"nodeId": 1, "job": {"rounds": 5, "lr_rate": 0.1}})", "cfg");
  REQUIRE_FALSE(json.ok());
  CHECK(json.status().message().find("lr_rate") != std::string::npos);
  auto ok =
      ParseNodeConfig("node_id: 1 network_id: \"fleet\" coordinator_key: \"k\" data_dir: \"/tmp\"", "cfg");
  REQUIRE(ok.ok());
  CHECK(ValidateNodeConfig(*ok).ok());
  ok->mutable_job()->set_nodes(4);
  CHECK(ValidateJobConfig(ok->job(), 1).ok());
  CHECK(ValidateJobConfig(ok->job(), 4).message().find("node_id 4") != std::string::npos);
  ok->mutable_job()->set_algorithm("fedsgd");
  CHECK(ValidateJobConfig(ok->job(), 1).message().find("fedsgd") != std::string::npos);
  ok->mutable_job()->set_algorithm("fedavg");  // a federated job: aggregator 0, clients 1 .. 3
  CHECK(ValidateJobConfig(ok->job(), 1).ok());
  ok->mutable_job()->set_algorithm("dpsgd");
  ok->mutable_job()->set_job_id("a b");
  CHECK(ValidateJobConfig(ok->job(), 1).message().find("job_id") != std::string::npos);
  CHECK(ParseHostPort("[::1]:7001")->host == "::1");
  CHECK(ParseHostPort("127.0.0.1:7001")->port == 7001);
  CHECK_FALSE(ParseHostPort("::1:7001").ok());
  CHECK_FALSE(ParseHostPort("127.0.0.1:70001").ok());
}

TEST_CASE("Checkpoints round-trip and every damaged file is refused") {
  Checkpoint c;
  c.round = 42;
  c.params = {1.5f, -2.0f, 3.25f};
  c.algorithm = "push-sum none";
  c.vectors["x"] = {0.5f, 1e-30f, -7.0f};
  c.vectors["sent/3"] = {1.0f, 2.0f, 3.0f};
  c.scalars["w"] = 0.1;  // not exact in binary: must come back bit for bit
  c.scalars["learner/batches"] = 12345;
  auto bytes = EncodeCheckpoint(c);
  // Header 24, params 12, algorithm 4+13, vector count 4, two vectors
  // (4+1+8+12, 4+6+8+12), scalar count 4, two scalars (4+1+8, 4+15+8), CRC 4.
  CHECK(bytes.size() == 24 + 12 + 17 + 4 + 25 + 30 + 4 + 13 + 27 + 4);
  auto back = DecodeCheckpoint(bytes, 3);
  REQUIRE(back.ok());
  CHECK(back->round == 42);
  CHECK(back->params == c.params);
  CHECK(back->algorithm == c.algorithm);
  CHECK(back->vectors == c.vectors);
  CHECK(back->scalars == c.scalars);
  CHECK(DecodeCheckpoint(bytes, 4).status().code() == StatusCode::kFailedPrecondition);
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
  future[4] = 3;
  CHECK(DecodeCheckpoint(future, 0).status().message().find("version 3") != std::string::npos);
  const std::string text = "job { algorithm: 'dpsgd' }";
  auto foreign =
      DecodeCheckpoint(std::span(reinterpret_cast<const std::uint8_t*>(text.data()), text.size()), 1);
  CHECK(foreign.status().message().find("not a murmur checkpoint") != std::string::npos);
}

// (A helper, not "n" + to_string: GCC 12 warns falsely on that concatenation.)
std::string NodeDir(NodeId i) { return std::string("n").append(std::to_string(i)); }

struct Cluster {
  static constexpr NodeId kNodes = 4;
  fs::path root;
  std::vector<std::uint16_t> ports;
  std::function<void(proto::JobConfig&)> job_tweak;       // changes to every daemon's job
  std::function<void(NodeId, proto::NodeConfig&)> tweak;  // applied last by Config

  Cluster() {
    root = fs::temp_directory_path() / std::string("murmurd_test_").append(std::to_string(::getpid()));
    fs::remove_all(root);
    auto coordinator = testing::Seeded(100);
    fs::create_directories(root);
    REQUIRE(coordinator.Save(root.string(), true).ok());
    for (NodeId i = 0; i < kNodes; ++i) {
      fs::path dir = root / NodeDir(i);
      fs::create_directories(dir);
      auto creds = testing::Creds(coordinator, static_cast<std::uint8_t>(i + 1));
      REQUIRE(creds.identity.Save(dir.string(), true).ok());
      REQUIRE(crypto::SaveCertificateFile((dir / "node.cert").string(), creds.certificate).ok());
      asio::io_context io;
      asio::ip::tcp::acceptor probe(io, {asio::ip::make_address("127.0.0.1"), 0});
      ports.push_back(probe.local_endpoint().port());
    }
  }
  ~Cluster() { fs::remove_all(root); }

  proto::NodeConfig Config(NodeId i, std::uint64_t rounds) const {
    proto::NodeConfig c;
    c.set_node_id(i);
    c.set_listen("127.0.0.1:" + std::to_string(ports[i]));
    c.set_data_dir((root / NodeDir(i)).string());
    c.set_coordinator_key((root / "identity.pub").string());
    c.set_network_id("fleet");
    c.set_log_level("warning");
    c.set_linger(0.5);
    for (NodeId j = 0; j < kNodes; ++j) {
      if (j == i) continue;
      auto* p = c.add_peers();
      p->set_id(j);
      p->set_address("127.0.0.1:" + std::to_string(ports[j]));
    }
    auto* job = c.mutable_job();
    job->set_dataset("synthetic:blobs");
    job->set_model("softmax");
    job->set_nodes(kNodes);
    job->set_topology("ring");
    job->set_rounds(rounds);
    job->set_lr(0.05);
    job->set_checkpoint_every(5);
    job->set_eval_every(0);
    if (job_tweak) job_tweak(*job);
    if (tweak) tweak(i, c);
    return c;
  }

  // Runs all daemons to the end; returns their final models.
  std::vector<std::vector<float>> RunAll(std::uint64_t rounds, std::vector<std::uint64_t>* done = nullptr) {
    std::vector<std::unique_ptr<Daemon>> ds;
    for (NodeId i = 0; i < kNodes; ++i) {
      auto d = Daemon::Create(Config(i, rounds));
      REQUIRE_MESSAGE(d.ok(), d.status().ToString());
      ds.push_back(std::move(d).value());
    }
    std::vector<std::thread> threads;
    for (auto& d : ds) threads.emplace_back([&d] { CHECK(d->Run().ok()); });
    for (auto& t : threads) t.join();
    std::vector<std::vector<float>> out;
    for (auto& d : ds) {
      out.push_back(d->params());
      if (done) done->push_back(d->rounds_done());
    }
    return out;
  }
};

// The same job in the simulator, built the way the daemon builds it, on the
// data and partition murmur sim's world gives its nodes (sim/world.h) for
// `dataset` and `partition` (default: the job's).
std::vector<std::vector<float>> Simulate(const proto::NodeConfig& config, std::string dataset = "",
                                         std::string partition = "") {
  const proto::JobConfig& job = config.job();
  proto::Scenario scenario;
  scenario.set_dataset(dataset.empty() ? job.dataset() : dataset);
  scenario.set_data_dir(ml::kFashionMnistDir);
  scenario.set_partition(partition.empty() ? job.partition() : partition);
  scenario.set_nodes(job.nodes());
  scenario.set_seed(job.seed());
  scenario.set_lr(job.lr());
  scenario.set_lr_schedule(job.lr_schedule());
  scenario.set_lr_min(job.lr_min());
  scenario.set_rounds(job.rounds());
  scenario.set_local_steps(job.local_steps());
  auto lr_schedule = sim::ScenarioSchedule(scenario);
  REQUIRE_MESSAGE(lr_schedule.ok(), lr_schedule.status().ToString());
  auto world = sim::BuildWorld(scenario);
  REQUIRE_MESSAGE(world.ok(), world.status().ToString());
  const ml::TrainTest& data = (*world)->data;
  const ml::Partition& part = *(*world)->partition;
  auto model = ml::MakeModel(job.model(), data.train.dim, data.train.num_classes).value();
  topology::TopologySpec spec;
  spec.kind = job.topology();
  spec.nodes = job.nodes();
  spec.seed = job.seed();
  auto schedule = topology::MakeSchedule(spec).value();
  gossip::RoundTopology topo(schedule->At(0));
  sim::Simulator simulator(sim::SimulatorOptions{}, std::vector<sim::DeviceProfile>(job.nodes()));
  std::vector<std::unique_ptr<ml::MlLearner>> learners;
  std::vector<std::unique_ptr<gossip::DecentralizedSgdNode>> nodes;
  auto cs = gossip::CodecSpec::Parse(job.compression()).value();
  for (NodeId i = 0; i < job.nodes(); ++i) {
    ml::MlLearnerOptions lo;
    lo.batch = static_cast<int>(job.batch());
    lo.lr = job.lr();
    lo.schedule = *lr_schedule;
    learners.push_back(std::make_unique<ml::MlLearner>(*model, data.train, part.node(i), lo,
                                                       Rng(job.seed(), i, RngPurpose::kBatch)));
    ParamVector x0(model->layout());
    Rng init(job.seed(), 0, RngPurpose::kInit);
    model->InitParams(x0, init);
    gossip::DecentralizedSgdOptions o;
    o.rounds = job.rounds();
    nodes.push_back(std::make_unique<gossip::DecentralizedSgdNode>(
        simulator.env(i), topo, *learners[i], std::move(x0),
        std::make_unique<gossip::Codec>(cs, i, model->layout(), Rng(job.seed(), i, RngPurpose::kCompression)),
        o, nullptr));
    simulator.SetSink(i, nodes.back().get());
  }
  for (auto& n : nodes) n->Start();
  simulator.RunUntil(Nanos::max());
  std::vector<std::vector<float>> out;
  for (auto& n : nodes) out.emplace_back(n->params().span().begin(), n->params().span().end());
  // Accuracy of the averaged model, for the log.
  return out;
}

TEST_CASE("Gossip jobs with a learning-rate schedule train the models murmur sim trains with it") {
  const std::uint64_t rounds = 12;
  Cluster constant;
  auto flat = constant.RunAll(rounds);
  for (const char* spec : {"cosine", "step:4:0.5"}) {
    CAPTURE(spec);
    Cluster cluster;
    cluster.job_tweak = [spec](proto::JobConfig& job) {
      job.set_lr_schedule(spec);
      job.set_lr_min(0.005);
    };
    std::vector<std::uint64_t> done;
    auto real = cluster.RunAll(rounds, &done);
    auto simulated = Simulate(cluster.Config(0, rounds));
    for (NodeId i = 0; i < Cluster::kNodes; ++i) {
      CAPTURE(i);
      CHECK(done[i] == rounds);
      CHECK(real[i] == simulated[i]);
      CHECK(real[i] != flat[i]);  // the schedule took effect
    }
  }
  proto::JobConfig bad;
  bad.set_lr_schedule("step:0:0.5");
  CHECK(ValidateJobConfig(bad, 0).message().find("job field 'lr_schedule'") != std::string::npos);
  bad.set_lr_schedule("cosine");
  bad.set_lr_min(1);
  CHECK(ValidateJobConfig(bad, 0).message().find("job field 'lr_min'") != std::string::npos);
  bad.set_lr_min(0);
  bad.set_algorithm("fedavg");
  CHECK(ValidateJobConfig(bad, 1).message().find("job field 'lr_schedule'") != std::string::npos);
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
    auto ckpt = LoadCheckpoint(cluster.Config(i, rounds).data_dir() + "/checkpoint.bin", real[i].size());
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
        c.mutable_job()->set_partition("dirichlet:0.5");
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
  job.set_model("softmax");
  auto whole = LoadJobData(job, LocalData{csv.string(), ""}, 4, 2);
  REQUIRE_MESSAGE(whole.ok(), whole.status().ToString());
  CHECK(whole->data.train.num_samples == 8);
  CHECK(whole->data.test.num_samples == 2);
  for (std::int64_t i = 0; i < 8; ++i)
    CHECK(whole->data.train.row(i)[0] == 10.0f * whole->data.train.labels[i]);
  auto spec = LoadJobData(job, LocalData{"csv:" + csv.string(), ""}, 4, 2);
  REQUIRE(spec.ok());
  CHECK(spec->data.train.features == whole->data.train.features);
  fs::remove(csv);
  auto missing = LoadJobData(job, LocalData{csv.string(), ""}, 4, 2);
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.status().message().find("config field 'data'") != std::string::npos);
  CHECK(missing.status().message().find(csv.filename().string()) != std::string::npos);
}

// A gossip job of four daemons on loopback with local momentum 0.9 (so the
// learners' state matters too): the job run to 20 rounds at once, and the
// same job run to 10, the daemons stopped, then restarted with rounds = 20
// from their checkpoints, must give the same models bit for bit.
void CheckResumeIsExact(const std::string& algorithm, const std::string& compression,
                        const std::string& topology) {
  Cluster cluster;
  cluster.job_tweak = [&](proto::JobConfig& job) {
    job.set_algorithm(algorithm);
    job.set_compression(compression);
    job.set_topology(topology);
    job.set_momentum(algorithm == "dsgt" ? 0 : 0.9);  // DSGT applies gradients itself
  };
  auto fresh = [&] {
    for (NodeId i = 0; i < Cluster::kNodes; ++i) fs::remove(cluster.root / NodeDir(i) / kCheckpointFile);
  };
  std::vector<std::uint64_t> done;
  auto whole = cluster.RunAll(20, &done);
  for (auto d : done) CHECK(d == 20);
  fresh();
  auto half = cluster.RunAll(10);
  for (NodeId i = 0; i < Cluster::kNodes; ++i) {
    auto ckpt = LoadCheckpoint((cluster.root / NodeDir(i) / kCheckpointFile).string(), half[i].size());
    REQUIRE(ckpt.ok());
    CHECK(ckpt->round == 10);
    CHECK(ckpt->algorithm == algorithm + " " + compression);
    CHECK(ckpt->vectors.count("learner/velocity") == (algorithm == "dsgt" ? 0u : 1u));
  }
  done.clear();
  auto resumed = cluster.RunAll(20, &done);
  for (NodeId i = 0; i < Cluster::kNodes; ++i) {
    CAPTURE(i);
    CHECK(done[i] == 20);
    CHECK(half[i] != whole[i]);
    CHECK(resumed[i] == whole[i]);
  }
  // A checkpoint of another algorithm's job is refused by name.
  const std::string other_algorithm = algorithm == "push-sum" ? "dsgt" : "push-sum";
  cluster.job_tweak = [&](proto::JobConfig& job) {
    job.set_algorithm(other_algorithm);
    job.set_compression("none");
    job.set_topology("ring");
  };
  auto other = Daemon::Create(cluster.Config(0, 40));
  Status st = other.ok() ? (*other)->Run() : other.status();
  CHECK(st.message().find("holds the state of a '" + algorithm + " " + compression +
                          "' job, this job runs '" + other_algorithm + " none'") != std::string::npos);
}

TEST_CASE("murmurd D-PSGD stopped after round 10 and restarted ends as a job never stopped") {
  CheckResumeIsExact("dpsgd", "none", "ring");
}
TEST_CASE("murmurd CHOCO-SGD top-k with error feedback stopped and restarted ends as a job never stopped") {
  CheckResumeIsExact("dpsgd-cta", "topk:0.1", "ring");
}
TEST_CASE("murmurd D-PSGD fp16 on one-peer-exponential stopped and restarted ends as a job never stopped") {
  CheckResumeIsExact("dpsgd", "fp16", "one-peer-exponential");
}
TEST_CASE("murmurd push-sum on one-peer-exponential stopped and restarted ends as a job never stopped") {
  CheckResumeIsExact("push-sum", "none", "one-peer-exponential");
}
TEST_CASE("murmurd DSGT stopped after round 10 and restarted ends as a job never stopped") {
  CheckResumeIsExact("dsgt", "none", "ring");
}

TEST_CASE("Every example job in examples/jobs parses and validates for each of its nodes") {
  int count = 0;
  for (const auto& entry : fs::directory_iterator(std::string(MURMUR_SOURCE_DIR) + "/examples/jobs")) {
    if (entry.path().extension() != ".job") continue;
    CAPTURE(entry.path().string());
    ++count;
    auto job = LoadJobConfig(entry.path().string());
    REQUIRE(job.ok());
    for (NodeId i = 0; i < job->nodes(); ++i) {
      CAPTURE(i);
      CHECK(ValidateJobConfig(*job, i).ok());
      auto topo = MakeJobTopology(*job, i);
      REQUIRE(topo.ok());
      CHECK_FALSE(topo->neighbours.empty());
    }
  }
  CHECK(count >= 3);
}

// Gossip learning on murmurd: asynchronous, so a run is one sample of a random
// process (wake-up times follow the real clock, merges the arrival order), not
// a bit-exact replay of the simulator's. Period 50 ms keeps each test to seconds.
void GossipLearningJob(proto::JobConfig& job) {
  job.set_algorithm("gossip-learning");
  job.set_period(0.05);
  job.set_lr(0.2);
  job.set_fanout(1);
  job.set_age_weighted(true);
}

// Mean test accuracy of the nodes' own models on the synthetic blobs.
double MeanBlobsAccuracy(const std::vector<std::vector<float>>& models) {
  auto data = ml::LoadDatasetSpec("synthetic:blobs", "", 1).value();
  auto model = ml::MakeModel("softmax", data.train.dim, data.train.num_classes).value();
  auto ws = model->NewWorkspace();
  double sum = 0;
  for (const auto& m : models) {
    ParamVector x(model->layout());
    REQUIRE(m.size() == x.size());
    std::copy(m.begin(), m.end(), x.data());
    sum += model->Evaluate(x, data.test, *ws).accuracy;
  }
  return sum / static_cast<double>(models.size());
}

// `murmur sim` of the same job: gossip-learning on "complete" draws peers
// uniformly from all nodes, as the daemons' membership sampler does.
Result<sim::RunSummary> SimulateGossipLearning(const proto::JobConfig& job, std::uint64_t seed) {
  proto::Scenario s;
  s.set_dataset(job.dataset());
  s.set_model(job.model());
  s.set_nodes(job.nodes());
  s.set_algorithm("gossip-learning");
  s.set_topology("complete");
  s.set_compression(job.compression());
  s.set_rounds(job.rounds());
  s.set_eval_every(job.rounds());
  s.set_lr(job.lr());
  s.set_batch(job.batch());
  s.set_local_steps(job.local_steps());
  s.set_period(job.period());
  s.set_fanout(job.fanout());
  s.set_age_weighted(job.age_weighted());
  s.set_seed(seed);
  return sim::RunScenario(s);
}

TEST_CASE("Four murmurd daemons run gossip learning to every wake-up and to the simulator's accuracy") {
  Cluster cluster;
  cluster.job_tweak = GossipLearningJob;
  const std::uint64_t rounds = 80;
  std::vector<std::uint64_t> done;
  auto real = cluster.RunAll(rounds, &done);
  for (NodeId i = 0; i < Cluster::kNodes; ++i) {
    CAPTURE(i);
    CHECK(done[i] == rounds);
    auto ckpt = LoadCheckpoint((cluster.root / NodeDir(i) / kCheckpointFile).string(), real[i].size());
    REQUIRE(ckpt.ok());
    CHECK(ckpt->round == rounds);
    CHECK(ckpt->algorithm == "gossip-learning none");
    CHECK(ckpt->scalars.at("wakeups") == static_cast<double>(rounds));
    // Age is max(own, received) + H per wake-up: at least the node's own steps.
    CHECK(ckpt->scalars.at("age") >= static_cast<double>(rounds));
  }
  const double daemons = MeanBlobsAccuracy(real);
  // Seed 1 is the daemons' seed; seeds 2-5 measure how far one asynchronous
  // run of this job may land from another (kGossipLearningTolerance).
  std::vector<double> simulated;
  for (std::uint64_t seed : {1, 2, 3, 4, 5}) {
    auto run = SimulateGossipLearning(cluster.Config(0, rounds).job(), seed);
    REQUIRE_MESSAGE(run.ok(), run.status().ToString());
    REQUIRE(!run->points.empty());
    simulated.push_back(run->points.back().acc_mean);
  }
  const double lo = *std::min_element(simulated.begin(), simulated.end());
  const double hi = *std::max_element(simulated.begin(), simulated.end());
  MESSAGE("gossip learning, " << rounds << " wake-ups: daemons' mean accuracy " << daemons
                              << ", murmur sim seed 1 " << simulated[0] << ", seeds 1-5 in [" << lo << ", "
                              << hi << "]");
  CHECK(hi - lo <= kGossipLearningTolerance);
  CHECK(std::abs(daemons - simulated[0]) <= kGossipLearningTolerance);
}

TEST_CASE("A stopped gossip-learning daemon is not drawn once it has left, and resumes from its checkpoint") {
  Cluster cluster;
  cluster.job_tweak = GossipLearningJob;
  const std::uint64_t rounds = 60;
  const NodeId stopped = Cluster::kNodes - 1;
  std::vector<std::unique_ptr<Daemon>> ds;
  for (NodeId i = 0; i < Cluster::kNodes; ++i) {
    auto d = Daemon::Create(cluster.Config(i, rounds));
    REQUIRE_MESSAGE(d.ok(), d.status().ToString());
    ds.push_back(std::move(d).value());
  }
  std::vector<std::thread> threads;
  for (auto& d : ds) threads.emplace_back([&d] { CHECK(d->Run().ok()); });
  // Up for >= 10 wake-ups, and drawn by every other daemon at least once.
  REQUIRE(testing::WaitFor(
      [&] {
        if (ds[stopped]->rounds_done() < 10) return false;
        for (NodeId i = 0; i < stopped; ++i) {
          auto draws = ds[i]->peer_draws();
          if (draws.size() != Cluster::kNodes || draws[stopped] == 0) return false;
        }
        return true;
      },
      std::chrono::seconds(10)));
  // Stop: the daemon leaves the membership, drains its wake-up, checkpoints it.
  ds[stopped]->RequestStop();
  threads[stopped].join();
  const std::uint64_t k = ds[stopped]->rounds_done();
  CHECK(k < rounds);
  auto ckpt = LoadCheckpoint((cluster.root / NodeDir(stopped) / kCheckpointFile).string(),
                             ds[stopped]->params().size());
  REQUIRE(ckpt.ok());
  CHECK(ckpt->round == k);
  CHECK(ckpt->scalars.at("wakeups") == static_cast<double>(k));
  // Once its leave has arrived (its Run
  // returned after a 0.5 s linger), they must not. Over a 1 s window each makes
  // m >= 10 wake-ups; a sampler that still drew it uniformly from 3 peers would
  // miss it with probability (2/3)^m <= 0.02 per node.
  std::vector<std::uint64_t> before, wakeups_before;
  for (NodeId i = 0; i < stopped; ++i) {
    CAPTURE(i);
    before.push_back(ds[i]->peer_draws().at(stopped));
    wakeups_before.push_back(ds[i]->rounds_done());
  }
  std::this_thread::sleep_for(std::chrono::seconds(1));
  for (NodeId i = 0; i < stopped; ++i) {
    CAPTURE(i);
    CHECK(ds[i]->rounds_done() >= wakeups_before[i] + 10);
    CHECK(ds[i]->peer_draws().at(stopped) == before[i]);
  }
  // Restart: it resumes after wake-up k and makes only the rest.
  ds[stopped].reset();
  auto again = Daemon::Create(cluster.Config(stopped, rounds));
  REQUIRE_MESSAGE(again.ok(), again.status().ToString());
  ds[stopped] = std::move(again).value();
  CHECK(ds[stopped]->rounds_done() == k);
  threads[stopped] = std::thread([&d = ds[stopped]] { CHECK(d->Run().ok()); });
  for (auto& t : threads) t.join();
  for (NodeId i = 0; i < Cluster::kNodes; ++i) {
    CAPTURE(i);
    CHECK(ds[i]->rounds_done() == rounds);
  }
  // Its draws count this life only: at most one per remaining wake-up (fanout 1).
  std::uint64_t drawn = 0;
  for (auto c : ds[stopped]->peer_draws()) drawn += c;
  CHECK(drawn <= rounds - k);
  auto last = LoadCheckpoint((cluster.root / NodeDir(stopped) / kCheckpointFile).string(),
                             ds[stopped]->params().size());
  REQUIRE(last.ok());
  CHECK(last->scalars.at("wakeups") == static_cast<double>(rounds));
  CHECK(last->scalars.at("age") >= static_cast<double>(rounds));
}

TEST_CASE("Gossip job fields murmurd cannot run are refused with errors naming the field") {
  auto refused = [](auto edit, const std::string& field) {
    proto::JobConfig job;
    edit(job);
    Status st = ValidateJobConfig(job, 0);
    CAPTURE(field);
    CAPTURE(st.ToString());
    CHECK(st.code() == StatusCode::kInvalidArgument);
    CHECK(st.message().find("'" + field + "'") != std::string::npos);
  };
  refused([](proto::JobConfig& j) { j.set_algorithm("gossip"); }, "algorithm");
  refused(
      [](proto::JobConfig& j) {
        j.set_algorithm("gossip-learning");
        j.set_period(0);
      },
      "period");
  refused(
      [](proto::JobConfig& j) {
        j.set_algorithm("gossip-learning");
        j.set_fanout(4);
      },
      "fanout");
  refused(
      [](proto::JobConfig& j) {
        j.set_algorithm("gossip-learning");
        j.set_compression("topk:0.1");
      },
      "compression");
  refused([](proto::JobConfig& j) { j.set_gamma(1.5); }, "gamma");
  refused([](proto::JobConfig& j) { j.set_momentum(1); }, "momentum");
  refused([](proto::JobConfig& j) { j.set_weight_decay(-1); }, "weight_decay");
  refused(
      [](proto::JobConfig& j) {
        j.set_algorithm("dsgt");
        j.set_momentum(0.9);
      },
      "momentum");
  refused(
      [](proto::JobConfig& j) {
        j.set_algorithm("push-sum");
        j.set_compression("topk:0.1");
      },
      "compression");
  refused([](proto::JobConfig& j) { j.set_compression("powersgd:2"); }, "compression");
  refused([](proto::JobConfig& j) { j.set_compression("zip:9"); }, "compression");
  // CHOCO on a time-varying topology: refused when the job is built.
  proto::JobConfig choco;
  choco.set_compression("topk:0.1");
  choco.set_topology("one-peer-exponential");
  choco.set_dataset("synthetic:blobs");
  choco.set_nodes(4);
  CHECK(ValidateJobConfig(choco, 0).ok());
  Cluster cluster;
  cluster.job_tweak = [](proto::JobConfig& j) {
    j.set_compression("topk:0.1");
    j.set_topology("one-peer-exponential");
  };
  auto d = Daemon::Create(cluster.Config(0, 10));
  Status st = d.ok() ? (*d)->Run() : d.status();
  CHECK(st.message().find("job field 'compression'") != std::string::npos);
  CHECK(st.message().find("static topology") != std::string::npos);
}

TEST_CASE("A stop request drains: the daemon returns, and its checkpoint holds the last completed round") {
  Cluster cluster;
  // Node 0 alone: its neighbours never come, so each round waits out its timeout.
  auto config = cluster.Config(0, 1000);
  config.mutable_job()->set_round_timeout(0.2);
  config.set_drain_timeout(5);
  auto d = Daemon::Create(config);
  REQUIRE(d.ok());
  std::thread t([&] { CHECK((*d)->Run().ok()); });
  REQUIRE(testing::WaitFor([&] { return (*d)->rounds_done() >= 2; }));
  const auto start = std::chrono::steady_clock::now();
  (*d)->RequestStop();
  t.join();
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(3));
  auto ckpt = LoadCheckpoint(config.data_dir() + "/checkpoint.bin", (*d)->params().size());
  REQUIRE(ckpt.ok());
  CHECK(ckpt->round == (*d)->rounds_done());
  CHECK(ckpt->round < 1000);
  CHECK(ckpt->params == (*d)->params());
}

}  // namespace
}  // namespace murmur::node
