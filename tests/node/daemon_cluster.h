// Cluster: four in-process murmurd daemons on loopback for the daemon tests
// (tests/node/daemon_test.cc, daemon_algorithms_test.cc), each with its own data
// directory, identity and certificate, running one gossip job given by the
// config; Simulate: the same job's spec run by `murmur sim`.
#pragma once

#include <doctest/doctest.h>

#include <unistd.h>

#include <filesystem>
#include <functional>
#include <thread>

#include "crypto/certificate.h"
#include "ml/dataset_spec.h"
#include "ml/idx.h"
#include "ml/model_spec.h"
#include "node/daemon.h"
#include "sim/runner.h"
#include "tests/node/loopback.h"

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
    }
    ports = FreeLoopbackPorts(kNodes);
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
    // Every daemon sends from 127.0.0.1: the per-address message budget
    // counts all peers together, so it is that of tools/fleet.sh's fleets
    // (a skipped message would stall its round for round_timeout).
    c.set_message_rate_per_address(10000.0 * kNodes);
    c.set_message_burst_per_address(20000.0 * kNodes);
    for (NodeId j = 0; j < kNodes; ++j) {
      if (j == i) continue;
      auto* p = c.add_peers();
      p->set_id(j);
      p->set_address("127.0.0.1:" + std::to_string(ports[j]));
    }
    auto* job = c.mutable_job();
    job->mutable_spec()->set_dataset("synthetic:blobs");
    job->mutable_spec()->set_model("softmax");
    job->mutable_spec()->set_nodes(kNodes);
    job->mutable_spec()->set_topology("ring");
    job->mutable_spec()->set_rounds(rounds);
    job->mutable_spec()->set_lr(0.05);
    job->mutable_spec()->set_compression("none");
    job->mutable_spec()->set_round_timeout(30);
    job->set_checkpoint_every(5);
    job->mutable_spec()->set_eval_every(0);
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

// The same job in `murmur sim`: the job's spec run by the simulator (the one
// engine builds both), on the data and partition murmur sim's world gives its
// nodes for `dataset` and `partition` (default: the spec's). Every node's
// final model.
inline std::vector<std::vector<float>> Simulate(const proto::NodeConfig& config, std::string dataset = "",
                                                std::string partition = "") {
  proto::Scenario scenario;
  *scenario.mutable_spec() = config.job().spec();
  if (!dataset.empty()) scenario.mutable_spec()->set_dataset(dataset);
  if (!partition.empty()) scenario.mutable_spec()->set_partition(partition);
  scenario.set_threads(1);
  auto run = sim::RunScenario(scenario, {}, sim::RunOptions{true});
  REQUIRE_MESSAGE(run.ok(), run.status().ToString());
  return std::move(run->final_models);
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
