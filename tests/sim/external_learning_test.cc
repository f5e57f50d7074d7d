// A run with the caller's learners (sim/run/external_learning.h) and the caller's
// interrupt flag. The caller's learners here are ml::MlLearner on a second
// copy of the spec's model, seeded as the runner seeds its own: the run must
// give murmur's own metrics bit for bit, one learner at a time on the
// simulation's thread or concurrently, with the spec's evaluation or the
// caller's.
#include "sim/run/external_learning.h"

#include <doctest/doctest.h>

#include <atomic>

#include "ml/model_spec.h"
#include "sim/runner.h"
#include "tests/sim/same_metrics.h"

namespace murmur::sim {
namespace {

proto::Scenario Small(const std::string& algorithm) {
  proto::Scenario s;
  s.mutable_spec()->set_dataset("synthetic:blobs");
  s.mutable_spec()->set_model("mlp:16");
  s.mutable_spec()->set_nodes(10);
  s.mutable_spec()->set_rounds(30);
  s.mutable_spec()->set_eval_every(10);
  s.mutable_spec()->set_algorithm(algorithm);
  s.mutable_spec()->set_compression(algorithm == "fedavg" ? "none" : "topk:0.2");
  s.set_eval_samples(300);
  s.set_threads(2);
  return s;
}

// The caller's side: one model (the spec's, built again), learners on it.
struct Caller {
  std::unique_ptr<ml::Model> model;
  ExternalLearning learning;
  int made = 0;

  Caller(const proto::Scenario& s, bool concurrent, bool evaluate) {
    learning.concurrent = concurrent;
    learning.make_learner =
        [this, spec = s.spec().model()](const NodeShare& share) -> Result<std::unique_ptr<LocalLearner>> {
      ++made;
      REQUIRE(share.train != nullptr);
      if (model == nullptr) model = ml::MakeModel(spec, share.train->dim, share.train->num_classes).value();
      return std::unique_ptr<LocalLearner>(
          std::make_unique<ml::MlLearner>(*model, *share.train, share.samples, share.options,
                                          Rng(share.seed, share.node, RngPurpose::kBatch)));
    };
    if (evaluate) {
      learning.evaluate = [this](const ParamVector& params, const ml::Dataset& test,
                                 std::span<const ml::SampleIndex> samples) {
        return model->Evaluate(params, test, samples, *ml::ScratchFor(*model).workspace);
      };
    }
  }
};

TEST_CASE("The caller's learners give murmur's own metrics, serial or concurrent, gossip or federated") {
  for (std::string algorithm : {"dpsgd", "fedavg"}) {
    const proto::Scenario s = Small(algorithm);
    const RunSummary native = RunScenario(s).value();
    for (bool concurrent : {false, true}) {
      for (bool evaluate : {false, true}) {
        CAPTURE(algorithm);
        CAPTURE(concurrent);
        CAPTURE(evaluate);
        Caller caller(s, concurrent, evaluate);
        RunOptions options;
        options.learning = &caller.learning;
        const RunSummary external = RunScenario(s, {}, options).value();
        CHECK(caller.made == 10);
        CheckSameMetrics(native, external);
        CHECK(external.points.back().avg_acc > 0.5);  // and it learned: chance is 0.1
      }
    }
  }
}

TEST_CASE("The interrupt flag stops a run between events, which then reports it") {
  for (std::string algorithm : {"dpsgd", "fedavg"}) {
    CAPTURE(algorithm);
    proto::Scenario s = Small(algorithm);
    s.mutable_spec()->set_rounds(1000);
    std::atomic<bool> stop{false};
    RunOptions options;
    options.interrupt = &stop;
    auto progress = [&](std::uint64_t done, std::uint64_t, const EvalPoint*) {
      if (done >= 5) stop.store(true);
    };
    const RunSummary r = RunScenario(s, progress, options).value();
    CHECK(r.stop_reason == "interrupted");
    CHECK(r.points.back().stop == "interrupted");
    CHECK(r.rounds_done >= 5);
    CHECK(r.rounds_done <= 6);
    // Federated: the server's model after its last round is the one a run of
    // that many rounds ends with. (Gossip nodes stop wherever they are in
    // their next round, so their last point has no such twin.)
    if (algorithm == "fedavg") {
      s.mutable_spec()->set_rounds(r.rounds_done);
      s.mutable_spec()->set_eval_every(1000);
      CHECK(RunScenario(s).value().points.back().avg_acc == r.points.back().avg_acc);
    }
  }
}

TEST_CASE("The caller's learners are refused where they cannot take part") {
  proto::Scenario s = Small("dpsgd");
  Caller caller(s, false, false);
  RunOptions options;
  options.learning = &caller.learning;
  SUBCASE("a factory that makes no learner") {
    caller.learning.make_learner = [](const NodeShare&) -> Result<std::unique_ptr<LocalLearner>> {
      return std::unique_ptr<LocalLearner>();
    };
    auto r = RunScenario(s, {}, options);
    REQUIRE(!r.ok());
    CHECK(r.status().message().find("no learner for node 0") != std::string::npos);
  }
  SUBCASE("a first model the spec's model cannot measure") {
    Layout layout;
    layout.Add("w", {7});
    caller.learning.initial = ParamVector(layout);
    auto r = RunScenario(s, {}, options);
    REQUIRE(!r.ok());
    CHECK(r.status().message().find("has 7 parameters") != std::string::npos);
  }
  SUBCASE("label-flip attackers, who train on murmur's flipped data") {
    s.mutable_spec()->set_algorithm("fedavg");
    s.mutable_spec()->set_compression("none");
    s.mutable_spec()->set_attack("label-flip");
    s.mutable_spec()->add_attackers(1);
    auto r = RunScenario(s, {}, options);
    REQUIRE(!r.ok());
    CHECK(r.status().message().find("label-flip") != std::string::npos);
  }
}

}  // namespace
}  // namespace murmur::sim
