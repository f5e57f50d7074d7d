// Scenario and job files (engine/files.h): the current layout, and the flat
// layout of murmur 0.1 read with a warning and its meaning kept.
#include "config/files.h"

#include <doctest/doctest.h>

#include <string>
#include <vector>

namespace murmur::config {
namespace {

TEST_CASE("A 0.1 scenario file is read into spec { } with a warning naming each moved field") {
  std::vector<std::string> warnings;
  auto s = ParseScenario("nodes: 16\nalgorithm: \"dsgt\"\nloss: 0.1\ncompression: \"none\"\n",
                         "old.textproto", &warnings);
  REQUIRE_MESSAGE(s.ok(), s.status().ToString());
  CHECK(s->spec().nodes() == 16);
  CHECK(s->spec().algorithm() == "dsgt");
  CHECK(s->spec().compression() == "none");
  CHECK(s->loss() == doctest::Approx(0.1));  // a simulated-world field stays where it was
  CHECK_FALSE(s->spec().has_model());        // defaults are the same as 0.1's: nothing added
  REQUIRE(warnings.size() == 1);
  CHECK(warnings[0].find("old.textproto") != std::string::npos);
  CHECK(warnings[0].find("nodes, algorithm, compression now belong in spec { ... }") != std::string::npos);
  // JSON too.
  warnings.clear();
  auto j = ParseScenario(R"({"nodes": 9, "devices": "phone"})", "old.json", &warnings);
  REQUIRE(j.ok());
  CHECK(j->spec().nodes() == 9);
  CHECK(j->devices() == "phone");
  CHECK(warnings.size() == 1);
}

TEST_CASE("A 0.1 job file keeps its meaning: its old defaults, federated nodes and attackers, key timeout") {
  std::vector<std::string> warnings;
  // Gossip: 0.1's defaults (model softmax, compression none, rounds 100, ...) are written into the spec.
  auto g = ParseJobConfig(
      "job_id: \"g\"\nalgorithm: \"dpsgd\"\nnodes: 8\ndataset_dir: \"/d\"\ncheckpoint_every: 3\n", "g.job",
      &warnings);
  REQUIRE_MESSAGE(g.ok(), g.status().ToString());
  CHECK(g->job_id() == "g");
  CHECK(g->checkpoint_every() == 3);
  CHECK(g->spec().nodes() == 8);
  CHECK(g->spec().data_dir() == "/d");
  CHECK(g->spec().model() == "softmax");
  CHECK(g->spec().compression() == "none");
  CHECK(g->spec().rounds() == 100);
  CHECK(g->spec().round_timeout() == 30);
  CHECK(g->spec().eval_every() == 10);
  REQUIRE(warnings.size() == 1);
  CHECK(warnings[0].find("dataset_dir (now data_dir)") != std::string::npos);
  // Federated: 0.1 counted the aggregator's daemon in nodes, named attackers by node id
  // (aggregator 2: node ids 0, 1 are clients 0, 1; node 4 is client 3), and waited
  // round_timeout in each SecAgg+ key stage.
  warnings.clear();
  auto f = ParseJobConfig(
      "job_id: \"f\" algorithm: \"fedavg\" nodes: 6 aggregator: 2 attack: \"sign-flip\" attackers: 1 "
      "attackers: 4 "
      "secure_aggregation: false round_timeout: 12",
      "f.job", &warnings);
  REQUIRE_MESSAGE(f.ok(), f.status().ToString());
  CHECK(f->aggregator() == 2);
  CHECK(f->spec().nodes() == 5);
  REQUIRE(f->spec().attackers_size() == 2);
  CHECK(f->spec().attackers(0) == 1);
  CHECK(f->spec().attackers(1) == 3);
  CHECK(f->spec().secagg_timeout() == 12);
  CHECK(f->spec().clients_per_round() == 0);  // 0.1's "every client"
  CHECK(f->spec().deadline() == 60);
  REQUIRE(warnings.size() == 1);
  CHECK(warnings[0].find("counts its clients (5), not its daemons (6)") != std::string::npos);
  // Gossip learning drew from every member in 0.1.
  auto gl = ParseJobConfig("algorithm: \"gossip-learning\" nodes: 4", "gl.job");
  REQUIRE(gl.ok());
  CHECK(gl->spec().topology() == "complete");
}

TEST_CASE(
    "Files in the current layout load without warnings, and mixed layouts and unknown fields are refused") {
  std::vector<std::string> warnings;
  auto job = ParseJobConfig("job_id: \"j\"\nspec { nodes: 4 algorithm: \"push-sum\" }\naggregator: 0\n",
                            "j.job", &warnings);
  REQUIRE(job.ok());
  CHECK(warnings.empty());
  CHECK(job->spec().nodes() == 4);
  auto mixed = ParseJobConfig("job_id: \"j\"\nspec { nodes: 4 }\nrounds: 5\n", "mixed.job");
  REQUIRE_FALSE(mixed.ok());
  CHECK(mixed.status().message().find("mixed.job") != std::string::npos);
  CHECK(mixed.status().message().find("'rounds' belongs in the spec { ... } block") != std::string::npos);
  auto typo = ParseJobConfig("spec { nodez: 4 }", "typo.job");
  REQUIRE_FALSE(typo.ok());
  CHECK(typo.status().message().find("nodez") != std::string::npos);
}

TEST_CASE("ToTextWithDefaults shows every field of the spec, and the text reads back to the same message") {
  proto::Scenario s;
  s.mutable_spec()->set_nodes(7);
  s.set_loss(0.25);
  const std::string text = ToTextWithDefaults(s);
  CHECK(text.find("spec {") != std::string::npos);
  CHECK(text.find("  algorithm: \"dpsgd\"") != std::string::npos);  // a default, shown
  CHECK(text.find("nodes: 7") != std::string::npos);
  auto back = ParseScenario(text, "printed");
  REQUIRE(back.ok());
  CHECK(back->spec().nodes() == 7);
  CHECK(back->loss() == doctest::Approx(0.25));
  CHECK(back->spec().algorithm() == "dpsgd");
}

TEST_CASE("An old NodeConfig job block is refused with the new place of its fields") {
  const std::string hint = OldNodeJobHint("node_id: 1\njob { algorithm: \"dsgt\" rounds: 5 }\n");
  CHECK(hint.find("algorithm, rounds now belong in job { spec { ... } }") != std::string::npos);
  CHECK(OldNodeJobHint("node_id: 1\njob { spec { rounds: 5 } }\n").empty());
}

}  // namespace
}  // namespace murmur::config
