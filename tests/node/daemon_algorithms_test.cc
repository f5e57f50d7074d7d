// murmurd's gossip algorithms on four in-process daemons: learning-rate
// schedules against the simulator, exact resume of every algorithm from its
// checkpoint, the example jobs, gossip learning over membership's peer
// sampling, and the fields murmurd refuses.
#include <doctest/doctest.h>

#include <filesystem>
#include <functional>
#include <thread>

#include "config/files.h"
#include "engine/algorithms.h"
#include "engine/topology.h"
#include "ml/dataset_spec.h"
#include "ml/model_spec.h"
#include "node/config.h"
#include "node/daemon.h"
#include "node/job/checkpoint.h"
#include "node/job/gossip_job.h"
#include "node/job/job.h"
#include "sim/runner.h"
#include "tests/node/daemon_cluster.h"
#include "tests/node/loopback.h"

namespace murmur::node {
namespace {

namespace fs = std::filesystem;
using testing::Cluster;
using testing::MeanBlobsAccuracy;
using testing::NodeDir;
using testing::Simulate;

// Gossip learning on daemons vs murmur sim of the same job: the mean test
// accuracy of the final models may differ by this much. The run is
// asynchronous (wake-ups on the real clock, merges in arrival order), so it is
// one draw of a random process, not a replay; the tolerance is the simulator's
// own spread over seeds 1-5 of this job (measured 0.948-0.971, 0.023), rounded
// up, and the test checks that spread still fits in it.
constexpr double kGossipLearningTolerance = 0.03;

TEST_CASE("Gossip jobs with a learning-rate schedule train the models murmur sim trains with it") {
  const std::uint64_t rounds = 12;
  Cluster constant;
  auto flat = constant.RunAll(rounds);
  for (const char* spec : {"cosine", "step:4:0.5"}) {
    CAPTURE(spec);
    Cluster cluster;
    cluster.job_tweak = [spec](proto::JobConfig& job) {
      job.mutable_spec()->set_lr_schedule(spec);
      job.mutable_spec()->set_lr_min(0.005);
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
  bad.mutable_spec()->set_lr_schedule("step:0:0.5");
  CHECK(ValidateJobConfig(bad, 0).message().find("spec field 'lr_schedule'") != std::string::npos);
  bad.mutable_spec()->set_lr_schedule("cosine");
  bad.mutable_spec()->set_lr_min(1);
  CHECK(ValidateJobConfig(bad, 0).message().find("spec field 'lr_min'") != std::string::npos);
  bad.mutable_spec()->set_lr_min(0);
  bad.mutable_spec()->set_algorithm("fedavg");
  CHECK(ValidateJobConfig(bad, 1).message().find("spec field 'lr_schedule'") != std::string::npos);
}

// A gossip job of four daemons on loopback with local momentum 0.9, or AdamW
// (so the learners' state matters too): the job run to 20 rounds at once, and the
// same job run to 10, the daemons stopped, then restarted with rounds = 20
// from their checkpoints, must give the same models bit for bit.
void CheckResumeIsExact(const std::string& algorithm, const std::string& compression,
                        const std::string& topology, const std::string& optimizer = "sgd") {
  Cluster cluster;
  const bool adamw = optimizer == "adamw";
  cluster.job_tweak = [&](proto::JobConfig& job) {
    job.mutable_spec()->set_algorithm(algorithm);
    job.mutable_spec()->set_compression(compression);
    job.mutable_spec()->set_topology(topology);
    job.mutable_spec()->set_optimizer(optimizer);
    if (adamw) job.mutable_spec()->set_lr(0.01);
    job.mutable_spec()->set_momentum(algorithm == "dsgt" || adamw ? 0
                                                                  : 0.9);  // DSGT applies gradients itself
  };
  auto fresh = [&] {
    for (NodeId i = 0; i < Cluster::kNodes; ++i) testing::ForgetJobs((cluster.root / NodeDir(i)).string());
  };
  std::vector<std::uint64_t> done;
  auto whole = cluster.RunAll(20, &done);
  for (auto d : done) CHECK(d == 20);
  fresh();
  auto half = cluster.RunAll(10);
  for (NodeId i = 0; i < Cluster::kNodes; ++i) {
    auto ckpt = LoadCheckpoint(testing::JobCheckpoint((cluster.root / NodeDir(i)).string()), half[i].size());
    REQUIRE(ckpt.ok());
    CHECK(ckpt->round == 10);
    CHECK(ckpt->algorithm == algorithm + " " + compression);
    CHECK(ckpt->vectors.count("learner/velocity") == (algorithm == "dsgt" || adamw ? 0u : 1u));
    CHECK(ckpt->vectors.count("learner/adam_m") == (adamw ? 1u : 0u));
    CHECK(ckpt->vectors.count("learner/adam_v") == (adamw ? 1u : 0u));
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
    job.mutable_spec()->set_algorithm(other_algorithm);
    job.mutable_spec()->set_compression("none");
    job.mutable_spec()->set_topology("ring");
  };
  auto other = Daemon::Create(cluster.Config(0, 40));
  Status st = other.ok() ? (*other)->Run() : other.status();
  CHECK(st.message().find("holds the state of a '" + algorithm + " " + compression +
                          "' job, this job runs '" + other_algorithm + " none'") != std::string::npos);
}

TEST_CASE("murmurd D-PSGD stopped after round 10 and restarted ends as a job never stopped") {
  CheckResumeIsExact("dpsgd", "none", "ring");
}
TEST_CASE("murmurd DiLoCo with inner AdamW stopped and restarted ends as a job never stopped") {
  CheckResumeIsExact("diloco", "none", "ring", "adamw");
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
    std::vector<std::string> warnings;
    auto job = config::LoadJobConfig(entry.path().string(), &warnings);
    REQUIRE(job.ok());
    CHECK(warnings.empty());  // written in the current layout
    const bool graph =
        engine::IsGossipAlgorithm(job->spec().algorithm()) && job->spec().algorithm() != "gossip-learning";
    auto topo = engine::MakeGraphTopology(job->spec(), job->spec().nodes());
    if (graph) REQUIRE(topo.ok());
    for (NodeId i = 0; i < DaemonsOf(*job); ++i) {
      CAPTURE(i);
      CHECK(ValidateJobConfig(*job, i).ok());
      if (graph) CHECK_FALSE(engine::NeighboursOf(*topo->schedule, i).empty());
    }
  }
  CHECK(count >= 3);
}

// Gossip learning on murmurd: asynchronous, so a run is one sample of a random
// process (wake-up times follow the real clock, merges the arrival order), not
// a bit-exact replay of the simulator's. Period 50 ms keeps each test to seconds.
void GossipLearningJob(proto::JobConfig& job) {
  job.mutable_spec()->set_algorithm("gossip-learning");
  job.mutable_spec()->set_topology("complete");  // peers drawn from every member
  job.mutable_spec()->set_period(0.05);
  job.mutable_spec()->set_lr(0.2);
  job.mutable_spec()->set_fanout(1);
  job.mutable_spec()->set_age_weighted(true);
}

// `murmur sim` of the same job's spec, with another seed.
Result<sim::RunSummary> SimulateGossipLearning(const proto::JobConfig& job, std::uint64_t seed) {
  proto::Scenario s;
  *s.mutable_spec() = job.spec();
  s.mutable_spec()->set_seed(seed);
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
    auto ckpt = LoadCheckpoint(testing::JobCheckpoint((cluster.root / NodeDir(i)).string()), real[i].size());
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
  std::vector<std::thread> threads;
  cluster.StartAll(rounds, &ds, &threads);
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
  auto ckpt = LoadCheckpoint(testing::JobCheckpoint((cluster.root / NodeDir(stopped)).string()),
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
  auto last = LoadCheckpoint(testing::JobCheckpoint((cluster.root / NodeDir(stopped)).string()),
                             ds[stopped]->params().size());
  REQUIRE(last.ok());
  CHECK(last->scalars.at("wakeups") == static_cast<double>(rounds));
  CHECK(last->scalars.at("age") >= static_cast<double>(rounds));
}

TEST_CASE("Gossip job fields murmurd cannot run are refused with errors naming the field") {
  auto refused = [](auto edit, const std::string& field) {
    proto::JobConfig job;
    job.mutable_spec()->set_nodes(4);
    edit(job);
    Status st = ValidateJobConfig(job, 0);
    CAPTURE(field);
    CAPTURE(st.ToString());
    CHECK(st.code() == StatusCode::kInvalidArgument);
    CHECK(st.message().find("'" + field + "'") != std::string::npos);
  };
  refused([](proto::JobConfig& j) { j.mutable_spec()->set_algorithm("gossip"); }, "algorithm");
  refused(
      [](proto::JobConfig& j) {
        j.mutable_spec()->set_algorithm("gossip-learning");
        j.mutable_spec()->set_period(0);
      },
      "period");
  refused(
      [](proto::JobConfig& j) {
        j.mutable_spec()->set_algorithm("gossip-learning");
        j.mutable_spec()->set_fanout(4);
      },
      "fanout");
  refused(
      [](proto::JobConfig& j) {
        j.mutable_spec()->set_algorithm("gossip-learning");
        j.mutable_spec()->set_compression("topk:0.1");
      },
      "compression");
  refused([](proto::JobConfig& j) { j.mutable_spec()->set_gamma(1.5); }, "gamma");
  refused([](proto::JobConfig& j) { j.mutable_spec()->set_momentum(1); }, "momentum");
  refused([](proto::JobConfig& j) { j.mutable_spec()->set_weight_decay(-1); }, "weight_decay");
  refused(
      [](proto::JobConfig& j) {
        j.mutable_spec()->set_algorithm("dsgt");
        j.mutable_spec()->set_momentum(0.9);
      },
      "momentum");
  refused(
      [](proto::JobConfig& j) {
        j.mutable_spec()->set_algorithm("push-sum");
        j.mutable_spec()->set_compression("topk:0.1");
      },
      "compression");
  refused([](proto::JobConfig& j) { j.mutable_spec()->set_compression("powersgd:2"); }, "compression");
  refused([](proto::JobConfig& j) { j.mutable_spec()->set_compression("zip:9"); }, "compression");
  refused([](proto::JobConfig& j) { j.mutable_spec()->set_topology("vehicles"); }, "topology");
  refused(
      [](proto::JobConfig& j) {
        j.mutable_spec()->set_attack("sign-flip");
        j.mutable_spec()->set_attack_fraction(0.25);
        j.mutable_spec()->set_compression("none");
      },
      "attack");
  // CHOCO on a time-varying topology: refused by the one validation, also
  // when a daemon's config holds the job.
  Cluster cluster;
  cluster.job_tweak = [](proto::JobConfig& j) {
    j.mutable_spec()->set_compression("topk:0.1");
    j.mutable_spec()->set_topology("one-peer-exponential");
  };
  auto d = Daemon::Create(cluster.Config(0, 10));
  Status st = d.ok() ? (*d)->Run() : d.status();
  CHECK(st.message().find("spec field 'compression'") != std::string::npos);
  CHECK(st.message().find("static topology") != std::string::npos);
}

}  // namespace
}  // namespace murmur::node
