// Whole scenarios through RunScenario, on small synthetic data.
#include "sim/runner.h"

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>

#include "compression/compressor.h"
#include "config/files.h"
#include "gossip/messages.h"
#include "sim/net/simulator.h"
#include "sim/run/scenario.h"
#include "tests/sim/same_metrics.h"

namespace murmur::sim {
namespace {

proto::Scenario Small() {
  proto::Scenario s;
  s.mutable_spec()->set_dataset("synthetic:blobs");
  s.mutable_spec()->set_model("mlp:16");
  s.mutable_spec()->set_nodes(12);
  s.mutable_spec()->set_rounds(60);
  s.mutable_spec()->set_eval_every(20);
  s.set_eval_samples(500);
  s.mutable_spec()->set_lr(0.1);
  return s;
}

TEST_CASE("The same seed gives identical metrics with 1 and 2 threads, for every algorithm") {
  for (std::string algorithm :
       {"dpsgd", "dpsgd-cta", "diloco", "allreduce", "push-sum", "dsgt", "gossip-learning"}) {
    CAPTURE(algorithm);
    proto::Scenario s = Small();
    s.mutable_spec()->set_algorithm(algorithm);
    s.mutable_spec()->set_compression(algorithm == "dpsgd" ? "topk:0.1" : "fp16");
    s.set_loss(0.05);
    s.set_devices("phone:0.5,iot:0.5");
    s.mutable_spec()->set_period(0.05);
    s.set_threads(1);
    auto one = RunScenario(s).value();
    s.set_threads(2);
    auto two = RunScenario(s).value();
    CheckSameMetrics(one, two);
    CHECK(one.points.back().avg_acc > 0.5);  // 10 well-separated blobs: chance is 0.1
  }
}

TEST_CASE("A run plans its job once: planned by the caller, or by RunScenario, gossip and federated") {
  for (const char* algorithm : {"dpsgd", "fedavg"}) {
    CAPTURE(algorithm);
    proto::Scenario s = Small();
    s.mutable_spec()->set_algorithm(algorithm);
    s.mutable_spec()->set_rounds(2);
    s.mutable_spec()->set_eval_every(0);
    std::uint64_t before = engine::JobsPlanned();
    auto plan = PlanScenario(s);
    REQUIRE(plan.ok());
    const RunSummary planned = RunScenario(*plan).value();  // as `murmur sim` runs
    CHECK(engine::JobsPlanned() == before + 1);
    before = engine::JobsPlanned();
    const RunSummary direct = RunScenario(s).value();
    CHECK(engine::JobsPlanned() == before + 1);
    CheckSameMetrics(planned, direct);
  }
}

// The point at round `r` of `s` run for `r` rounds and run for `longer`.
std::pair<EvalPoint, EvalPoint> PointOfShortAndLongRun(proto::Scenario s, std::uint64_t r,
                                                       std::uint64_t longer) {
  s.mutable_spec()->set_eval_every(r);
  s.mutable_spec()->set_rounds(longer);
  auto a = RunScenario(s).value();
  s.mutable_spec()->set_rounds(r);
  auto b = RunScenario(s).value();
  EvalPoint in_longer = a.points.at(1), last = b.points.back();
  REQUIRE(in_longer.round == r);
  REQUIRE(last.round == r);
  in_longer.wall_s = last.wall_s = 0;
  in_longer.stop = last.stop;  // only a run's last point says why it stopped
  return {last, in_longer};
}

TEST_CASE(
    "A mid-run evaluation point measures the models as they ended that round, like a run that stops there") {
  // Heterogeneous devices: fast nodes start their next round's local steps
  // long before the slowest node finishes, yet the point at round 20 of a
  // 40-round run must equal the last point of a 20-round run, traffic and
  // virtual time included (a run's nodes go on past its last round until
  // the slowest has finished it, as in a longer run).
  for (std::string algorithm : {"dpsgd", "push-sum", "dsgt"}) {
    CAPTURE(algorithm);
    proto::Scenario s = Small();
    s.mutable_spec()->set_algorithm(algorithm);
    s.mutable_spec()->set_compression(algorithm == "dpsgd" ? "none" : "fp16");
    s.set_devices("phone:0.5,iot:0.5");
    auto [last, in_longer] = PointOfShortAndLongRun(s, 20, 40);
    CHECK(CsvRow(last) == CsvRow(in_longer));
  }
}

TEST_CASE("A round's metrics do not depend on how many rounds follow it: vehicles, and a torus under churn") {
  // Round timeouts that bite and links that the next round's first messages
  // share with the stragglers' last ones: a run that stopped its nodes at
  // its last round gave those stragglers free links, more of their messages
  // made the deadline, and the last round's models differed from the same
  // round of a longer run (vehicles: node accuracy 0.4923 at round 10 of a
  // 10-round run, 0.4905 in a 20-round one).
  proto::Scenario vehicles = Small();
  vehicles.mutable_spec()->set_model("mlp:512");
  vehicles.mutable_spec()->set_nodes(64);
  vehicles.mutable_spec()->set_topology("vehicles");
  vehicles.set_rsus(4);
  vehicles.set_grid_blocks(8);
  vehicles.set_devices("vehicle");
  vehicles.mutable_spec()->set_compression("fp16");
  vehicles.mutable_spec()->set_round_timeout(0.3);
  proto::Scenario torus = Small();
  torus.mutable_spec()->set_algorithm("push-sum");
  torus.mutable_spec()->set_model("mlp:512");
  torus.mutable_spec()->set_nodes(48);
  torus.mutable_spec()->set_topology("torus");
  torus.set_devices("vehicle");
  torus.mutable_spec()->set_compression("fp16");
  torus.mutable_spec()->set_round_timeout(0.2);
  torus.set_churn_online(1);
  for (const auto& [name, scenario] :
       {std::pair{std::string("vehicles"), vehicles}, std::pair{std::string("torus, churn"), torus}}) {
    for (std::uint64_t seed : {1u, 2u, 3u}) {
      CAPTURE(name);
      CAPTURE(seed);
      proto::Scenario s = scenario;
      s.mutable_spec()->set_seed(seed);
      auto [last, in_longer] = PointOfShortAndLongRun(s, 6, 12);
      CHECK(CsvRow(last) == CsvRow(in_longer));
    }
  }
}

TEST_CASE("A different seed gives a different run") {
  proto::Scenario s = Small();
  auto a = RunScenario(s).value();
  s.mutable_spec()->set_seed(2);
  auto b = RunScenario(s).value();
  CHECK(CsvRow(a.points.back()) != CsvRow(b.points.back()));
}

TEST_CASE("Bytes the simulator charges equal the real encoding, for every compressor") {
  for (const char* spec :
       {"none", "fp16", "bf16", "int8", "topk:0.01", "topk:0.01:fp16", "topk:0.01:int8", "topk-approx:0.01",
        "randk:0.01", "threshold:0.5", "qsgd:16", "sign", "terngrad", "powersgd:2"}) {
    CAPTURE(spec);
    auto comp = compression::MakeCompressor(spec).value();
    Layout layout;
    layout.Add("w", {64, 32});
    layout.Add("b", {32});
    ParamVector v(layout);
    Rng rng(5);
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(rng.Normal());
    compression::CompressorState state;
    auto msg = std::make_shared<const gossip::GossipMessage>(gossip::Channel::kModel, 3, 0.0,
                                                             comp->Compress(v, state, rng));
    std::vector<std::uint8_t> wire;
    msg->EncodeTo(wire);
    Simulator sim({}, std::vector<DeviceProfile>(2));
    sim.env(0).Send(1, msg);
    sim.RunUntil(Nanos::max());
    CHECK(sim.traffic(0).bytes_sent == wire.size());
    CHECK(sim.traffic(1).bytes_received == 0);  // no sink: counted as lost, not received
    CHECK(sim.traffic(1).messages_lost == 1);
  }
}

TEST_CASE("Scenario files: text and JSON, unknown fields and bad values named") {
  auto text = config::ParseScenario("spec { nodes: 8 algorithm: \"dsgt\" }\nloss: 0.1\n", "t.txt").value();
  CHECK(text.spec().nodes() == 8);
  CHECK(text.spec().algorithm() == "dsgt");
  CHECK(text.spec().rounds() == 300);  // default
  CHECK(text.loss() == doctest::Approx(0.1));
  auto json =
      config::ParseScenario("{\"spec\": {\"nodes\": 9, \"compression\": \"fp16\"}}", "j.json").value();
  CHECK(json.spec().nodes() == 9);
  auto unknown = config::ParseScenario("spec { nodes: 8 node_count: 3 }\n", "bad.txt");
  REQUIRE_FALSE(unknown.ok());
  CHECK(unknown.status().message().find("node_count") != std::string::npos);
  CHECK(unknown.status().message().find("bad.txt") != std::string::npos);
  auto unknown_json = config::ParseScenario("{\"spec\": {\"nodez\": 9}}", "bad.json");
  REQUIRE_FALSE(unknown_json.ok());
  CHECK(unknown_json.status().message().find("nodez") != std::string::npos);
  // A spec field outside the spec block, next to the new layout: refused with a hint.
  auto mixed = config::ParseScenario("spec { nodes: 8 }\nalgorithm: \"dsgt\"\n", "mixed.txt");
  REQUIRE_FALSE(mixed.ok());
  CHECK(mixed.status().message().find("'algorithm' belongs in the spec { ... } block") != std::string::npos);
  proto::Scenario s;
  s.mutable_spec()->set_algorithm("gossip");
  CHECK(ValidateScenario(s).message().find("'algorithm'") != std::string::npos);
  s = proto::Scenario();
  s.set_loss(1.5);
  CHECK(ValidateScenario(s).message().find("'loss'") != std::string::npos);
  s = proto::Scenario();
  s.mutable_spec()->set_partition("dirichlet");
  s.mutable_spec()->set_dataset("synthetic:blobs");
  auto run = RunScenario(s);
  REQUIRE_FALSE(run.ok());
  CHECK(run.status().message().find("'partition'") != std::string::npos);
}

TEST_CASE("A run with churn and no time budget ends when the nodes finish their rounds") {
  proto::Scenario s = Small();
  s.set_devices("phone");
  s.set_churn_online(2);
  s.mutable_spec()->set_round_timeout(0.5);
  auto run = RunScenario(s);
  REQUIRE(run.ok());
  CHECK(run->rounds_done == s.spec().rounds());
  CHECK(run->virtual_s < 1000);  // churn alone would go on until its horizon
  std::uint32_t fewest = s.spec().nodes();
  for (const auto& p : run->points) fewest = std::min(fewest, p.online);
  CHECK(fewest < s.spec().nodes());  // churn did take nodes offline
}

TEST_CASE("A churn trace that cannot be read fails the run, naming the field and the file") {
  proto::Scenario s = Small();
  s.set_churn_trace("/nonexistent/churn.csv");
  auto run = RunScenario(s);
  REQUIRE_FALSE(run.ok());
  CHECK(run.status().message().find("'churn_trace'") != std::string::npos);
  CHECK(run.status().message().find("/nonexistent/churn.csv") != std::string::npos);
}

TEST_CASE("lr_schedule: bad specs and federated use are named") {
  proto::Scenario s = Small();
  for (const char* bad : {"linear", "step:", "step:0:0.5", "step:10:2", "step:10", "step:10:0.5x"}) {
    CAPTURE(bad);
    s.mutable_spec()->set_lr_schedule(bad);
    Status st = ValidateScenario(s);
    CHECK(st.code() == StatusCode::kInvalidArgument);
    CHECK(st.message().find("lr_schedule") != std::string::npos);
  }
  s.mutable_spec()->set_lr_schedule("step:10:0.5");
  CHECK(ValidateScenario(s).ok());
  auto o = PlanScenario(s).value().job().learner().schedule;
  CHECK(o.kind == ml::ScheduleKind::kStep);
  CHECK(o.step_size == 10);
  s.mutable_spec()->set_lr_schedule("cosine");
  s.mutable_spec()->set_lr_min(0.2);  // above lr 0.1
  CHECK(ValidateScenario(s).message().find("lr_min") != std::string::npos);
  s.mutable_spec()->set_lr_min(0.01);
  CHECK(PlanScenario(s).value().job().learner().schedule.total_steps == 60);
  s.mutable_spec()->set_algorithm("fedavg");
  CHECK(ValidateScenario(s).message().find("lr_schedule") != std::string::npos);
}

TEST_CASE("Every scenario in examples/ parses, validates, and names its run command") {
  int count = 0;
  for (const auto& entry :
       std::filesystem::directory_iterator(std::string(MURMUR_SOURCE_DIR) + "/examples")) {
    if (entry.path().extension() != ".textproto") continue;
    CAPTURE(entry.path().string());
    ++count;
    std::vector<std::string> warnings;
    auto s = config::LoadScenarioFile(entry.path().string(), &warnings);
    REQUIRE(s.ok());
    CHECK(warnings.empty());  // written in the current layout
    CHECK(ValidateScenario(*s).ok());
    std::ifstream in(entry.path());
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    CHECK(text.find("# Run: ") != std::string::npos);
    CHECK(text.find("--scenario examples/" + entry.path().filename().string()) != std::string::npos);
  }
  CHECK(count >= 6);
}

}  // namespace
}  // namespace murmur::sim

namespace murmur::sim {
namespace {

TEST_CASE("Gossip learning trains to its last wake-up whatever eval_every, and the last point says so") {
  // rounds 7, eval_every 3: points at 0, 3, 6 and the end, 7 periods in.
  proto::Scenario s = Small();
  s.mutable_spec()->set_algorithm("gossip-learning");
  s.mutable_spec()->set_compression("none");
  s.mutable_spec()->set_rounds(7);
  s.mutable_spec()->set_eval_every(3);
  auto run = RunScenario(s).value();
  REQUIRE(run.points.size() == 4);
  const EvalPoint& six = run.points[2];
  const EvalPoint& last = run.points.back();
  CHECK(six.round == 6);
  CHECK(last.round == 7);
  CHECK(last.virtual_s == doctest::Approx(7.0));
  CHECK(last.bytes_sent > six.bytes_sent);  // the seventh period's messages count
  CHECK(last.stop == "rounds done");
  // Fewer rounds than eval_every: the last point is the end, not round 0.
  s.mutable_spec()->set_rounds(5);
  s.mutable_spec()->set_eval_every(50);
  run = RunScenario(s).value();
  CHECK(run.points.back().round == 5);
  CHECK(run.points.back().bytes_sent > 0);
  CHECK(run.points.back().avg_acc > run.points.front().avg_acc + 0.1);
  // A time budget shorter than eval_every stops at its own time, as many periods in.
  s.mutable_spec()->set_rounds(40);
  s.set_time_budget(2.5);
  run = RunScenario(s).value();
  CHECK(run.points.back().round == 2);
  CHECK(run.points.back().bytes_sent > 0);
  CHECK(run.stop_reason == "time budget");
}

TEST_CASE("A DP budget that stops a federated run before its first round reports why, and epsilon 0") {
  proto::Scenario s = Small();
  s.mutable_spec()->set_algorithm("fedavg");
  s.mutable_spec()->set_nodes(20);
  s.mutable_spec()->set_clients_per_round(10);
  s.mutable_spec()->set_dp_clip(1);
  s.mutable_spec()->set_dp_noise(1);
  s.mutable_spec()->set_epsilon_budget(3);
  auto run = RunScenario(s).value();
  CHECK(run.rounds_done == 0);
  CHECK(run.epsilon == 0);  // nothing was released
  CHECK(run.stop_reason.find("privacy budget: round 1 would take epsilon from 0 to ") == 0);
  CHECK(run.points.back().stop == run.stop_reason);
  // With room for rounds: epsilon grows with them and every point carries it.
  s.mutable_spec()->set_epsilon_budget(0);
  s.mutable_spec()->set_dp_noise(4);
  s.mutable_spec()->set_rounds(4);
  s.mutable_spec()->set_eval_every(2);
  run = RunScenario(s).value();
  REQUIRE(run.points.size() == 3);
  CHECK(run.points[0].epsilon == 0);
  CHECK(run.points[1].epsilon > 0);
  CHECK(run.points[2].epsilon > run.points[1].epsilon);
  CHECK(run.epsilon == run.points[2].epsilon);
  CHECK(run.stop_reason == "rounds done");
  // The CSV's last column holds the stop reason on the last row only.
  CHECK(CsvRow(run.points[1]).back() == ',');
  CHECK(CsvRow(run.points[2]).find(",rounds done") != std::string::npos);
}

TEST_CASE("An edge-list file must match the node count and be connected") {
  const std::string dir = std::string(MURMUR_TESTDATA_DIR) + "/topology/";
  proto::Scenario s = Small();
  s.mutable_spec()->set_compression("none");
  s.mutable_spec()->set_rounds(4);
  s.mutable_spec()->set_topology("file:" + dir + "path4.edges");  // 0-1-2-3
  s.mutable_spec()->set_nodes(12);
  auto mismatch = RunScenario(s);
  REQUIRE_FALSE(mismatch.ok());
  CHECK(mismatch.status().message().find("has 4 nodes (ids 0 .. 3), not the 12 asked for") !=
        std::string::npos);
  s.mutable_spec()->set_nodes(4);
  auto run = RunScenario(s);
  REQUIRE_MESSAGE(run.ok(), run.status().ToString());
  CHECK(run->description.find("(spectral gap 0.") != std::string::npos);
  s.mutable_spec()->set_topology("file:" + dir + "two_pairs.edges");  // 0-1, 2-3
  auto split = RunScenario(s);
  REQUIRE_FALSE(split.ok());
  CHECK(split.status().message().find("is not connected") != std::string::npos);
}

}  // namespace
}  // namespace murmur::sim

namespace murmur::sim {
namespace {

TEST_CASE(
    "round_timeout 0 fits the link model: a lost message costs a fraction of a second, no loss costs "
    "nothing") {
  proto::Scenario s = Small();
  s.mutable_spec()->set_algorithm("push-sum");
  s.mutable_spec()->set_topology("exponential");
  s.mutable_spec()->set_rounds(20);
  s.set_loss(0.1);
  auto lossy = RunScenario(s).value();
  // With 60 s timeouts (0.1's default) every round with a loss took a minute.
  CHECK(lossy.points.back().messages_lost > 10);
  CHECK(lossy.virtual_s < 20 * 1.0);
  // Without loss the fitted timeout never fires: the same run as with none.
  s.set_loss(0);
  auto fitted = RunScenario(s).value();
  s.mutable_spec()->set_round_timeout(10000);
  auto patient = RunScenario(s).value();
  CheckSameMetrics(fitted, patient);
}

}  // namespace
}  // namespace murmur::sim

namespace murmur::sim {
namespace {

TEST_CASE(
    "A round clock starts round t at t x round_period, and mixes as without it when rounds are slower") {
  proto::Scenario s = Small();
  s.mutable_spec()->set_rounds(10);
  s.mutable_spec()->set_eval_every(5);
  s.set_devices("phone");
  auto free_run = RunScenario(s).value();
  const double natural = free_run.points.back().virtual_s / 10;  // one round's length, unclocked
  REQUIRE(natural < 1);
  // A period 4 s: round r starts at 4 r, so round 10 ends one round's length after 36 s.
  s.mutable_spec()->set_round_period(4);
  auto clocked = RunScenario(s).value();
  const EvalPoint& p5 = clocked.points.at(1);
  const EvalPoint& p10 = clocked.points.back();
  REQUIRE(p10.round == 10);
  CHECK(p5.virtual_s > 16);
  CHECK(p5.virtual_s < 16 + 4 * natural + 0.01);
  CHECK(p10.virtual_s > 36);
  CHECK(p10.virtual_s < 36 + 4 * natural + 0.01);
  // Nodes wait at the clock instead of for each other: the same models.
  CHECK(p10.avg_acc == free_run.points.back().avg_acc);
  CHECK(p10.consensus == free_run.points.back().consensus);
  // Algorithms without a round clock refuse the field.
  s.mutable_spec()->set_algorithm("push-sum");
  auto refused = RunScenario(s);
  REQUIRE(!refused.ok());
  CHECK(refused.status().message().find("round_period") != std::string::npos);
}

}  // namespace
}  // namespace murmur::sim
