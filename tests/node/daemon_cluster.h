// Cluster: four in-process murmurd daemons on loopback for the daemon tests
// (tests/node/daemon_test.cc, daemon_algorithms_test.cc), each with its own data
// directory, identity and certificate, running one gossip job given by the
// config; Simulate: the same D-PSGD job in the simulator, built the way the
// daemon builds it.
#pragma once

#include <doctest/doctest.h>

#include <unistd.h>

#include <filesystem>
#include <functional>
#include <thread>

#include "crypto/certificate.h"
#include "gossip/decentralized_sgd.h"
#include "ml/dataset_spec.h"
#include "ml/idx.h"
#include "ml/ml_learner.h"
#include "ml/model_spec.h"
#include "ml/partition.h"
#include "node/daemon.h"
#include "sim/scenario.h"
#include "sim/simulator.h"
#include "sim/world.h"
#include "tests/node/loopback.h"
#include "topology/factory.h"

namespace murmur::node::testing {

namespace fs = std::filesystem;

// (A helper, not "n" + to_string: GCC 12 warns falsely on that concatenation.)
inline std::string NodeDir(NodeId i) { return std::string("n").append(std::to_string(i)); }

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
      auto creds =
          testing::Creds(coordinator, static_cast<std::uint8_t>(i + 1), "fleet", 3600, crypto::kRoleNode, i);
      REQUIRE(creds.identity.Save(dir.string(), true).ok());
      REQUIRE(crypto::SaveCertificateFile((dir / "node.cert").string(), creds.certificate).ok());
      asio::io_context io;
      asio::ip::tcp::acceptor probe(io, {asio::ip::make_address("127.0.0.1"), 0});
      ports.push_back(probe.local_endpoint().port());
    }
  }
  ~Cluster() { fs::remove_all(root); }

  // Creates every daemon for a job of `rounds` and runs each on its own
  // thread (appended to *daemons and *threads; the caller stops and joins).
  void StartAll(std::uint64_t rounds, std::vector<std::unique_ptr<Daemon>>* daemons,
                std::vector<std::thread>* threads) const {
    for (NodeId i = 0; i < kNodes; ++i) {
      auto d = Daemon::Create(Config(i, rounds));
      REQUIRE_MESSAGE(d.ok(), d.status().ToString());
      daemons->push_back(std::move(d).value());
    }
    for (auto& d : *daemons) threads->emplace_back([&d] { CHECK(d->Run().ok()); });
  }

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
    std::vector<std::thread> threads;
    StartAll(rounds, &ds, &threads);
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
inline std::vector<std::vector<float>> Simulate(const proto::NodeConfig& config, std::string dataset = "",
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
  return out;
}

// Mean test accuracy of the nodes' own models on the synthetic blobs.
inline double MeanBlobsAccuracy(const std::vector<std::vector<float>>& models) {
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

}  // namespace murmur::node::testing
