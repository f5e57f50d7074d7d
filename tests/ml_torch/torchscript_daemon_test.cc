// TorchScript models on murmurd: four loopback daemons train a module with
// BatchNorm and dropout and end with the models murmur sim's run of the same
// spec ends with; a daemon whose copy of the model file differs refuses the
// job, naming both hashes; the simulator gives the same models on any number
// of threads.
#include <doctest/doctest.h>

#include <filesystem>

#include "engine/model_factory.h"
#include "ml/torch/torchscript_model.h"
#include "node/daemon.h"
#include "sim/runner.h"
#include "tests/node/daemon_cluster.h"

namespace murmur::node {
namespace {

namespace fs = std::filesystem;
using testing::Cluster;
using testing::NodeDir;

const std::string kModel = std::string(MURMUR_TORCH_FIXTURES) + "/bn_dropout.pt";

// Copies the BatchNorm + dropout module into every daemon's data directory
// as model.pt and points the job at it, with `hash` as its model_blake2b.
void UseModel(Cluster& cluster, const std::string& hash) {
  for (NodeId i = 0; i < Cluster::kNodes; ++i)
    fs::copy_file(kModel, cluster.root / NodeDir(i) / "model.pt", fs::copy_options::overwrite_existing);
  cluster.job_tweak = [hash](proto::JobConfig& job) {
    job.mutable_spec()->set_model("torchscript:model.pt");  // in each daemon's data_dir
    job.mutable_spec()->set_model_blake2b(hash);
  };
}

}  // namespace

TEST_CASE(
    "A TorchScript model with BatchNorm and dropout trains on 4 daemons as in murmur sim, bit for bit") {
  const std::string hash = engine::ModelFileBlake2b(kModel).value();
  Cluster cluster;
  UseModel(cluster, hash);
  constexpr std::uint64_t kRounds = 30;
  auto real = cluster.RunAll(kRounds);
  REQUIRE(real.size() == Cluster::kNodes);
  proto::NodeConfig config = cluster.Config(0, kRounds);
  config.mutable_job()->mutable_spec()->set_model("torchscript:" + kModel);
  auto simulated = testing::Simulate(config);
  REQUIRE(simulated.size() == real.size());
  for (NodeId i = 0; i < Cluster::kNodes; ++i) {
    CAPTURE(i);
    CHECK(real[i] == simulated[i]);
  }
  // And the models learned: the blobs' 10 classes, chance 0.10.
  auto data = ml::LoadDatasetSpec("synthetic:blobs", "", 1).value();
  const std::vector<std::int64_t> shape{data.train.dim};
  auto model = ml::LoadTorchScriptModel("torchscript:" + kModel, shape, data.train.num_classes).value();
  auto ws = model->NewWorkspace();
  for (const auto& m : real) {
    ParamVector x(model->layout());
    REQUIRE(m.size() == x.size());
    std::copy(m.begin(), m.end(), x.data());
    CHECK(model->Evaluate(x, data.test, *ws).accuracy > 0.8);
  }
}

TEST_CASE("A daemon whose model file differs from the job's refuses the job, naming both hashes") {
  const std::string hash = engine::ModelFileBlake2b(kModel).value();
  Cluster cluster;
  UseModel(cluster, hash);
  const fs::path other = cluster.root / NodeDir(3) / "model.pt";
  fs::copy_file(std::string(MURMUR_TORCH_FIXTURES) + "/mlp.pt", other, fs::copy_options::overwrite_existing);
  const std::string theirs = engine::ModelFileBlake2b(other.string()).value();
  REQUIRE(theirs != hash);
  auto refused = Daemon::Create(cluster.Config(3, 5));
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().message().find("model file '" + other.string() + "' has BLAKE2b " + theirs +
                                        " but the job's spec field 'model_blake2b' is " + hash) !=
        std::string::npos);
  // The daemons with the job's file accept it.
  auto accepted = Daemon::Create(cluster.Config(0, 5));
  CHECK_MESSAGE(accepted.ok(), accepted.status().ToString());
}

TEST_CASE(
    "murmur sim with a BatchNorm and dropout TorchScript model gives the same models on 1 and 3 threads") {
  std::vector<std::vector<float>> models[2];
  for (int t = 0; t < 2; ++t) {
    proto::Scenario scenario;
    scenario.mutable_spec()->set_dataset("synthetic:blobs");
    scenario.mutable_spec()->set_model("torchscript:" + kModel);
    scenario.mutable_spec()->set_nodes(8);
    scenario.mutable_spec()->set_rounds(20);
    scenario.mutable_spec()->set_compression("none");
    scenario.mutable_spec()->set_eval_every(0);
    scenario.set_threads(t == 0 ? 1 : 3);
    auto run = sim::RunScenario(scenario, {}, sim::RunOptions{true});
    REQUIRE_MESSAGE(run.ok(), run.status().ToString());
    models[t] = std::move(run->final_models);
  }
  REQUIRE(models[0].size() == 8);
  CHECK(models[0] == models[1]);
}

}  // namespace murmur::node
