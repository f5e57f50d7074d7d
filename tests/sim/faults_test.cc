// Injected faults in the simulator: what each gossip algorithm tolerates.
//
// Pure averaging (quadratic learners with step 0) has a closed-form answer:
// every node should end at the mean of the initial vectors. Push-sum with
// running sums (Hadjicostis et al. 2016) conserves sum_i w_i = n and
// sum_i x_i through drops, duplicates and reordering once the faults stop;
// D-PSGD deduplicates, so duplicates and reordering leave it bit-identical,
// but a dropped model leaves its weight on the receiver and moves the mean.
#include <doctest/doctest.h>

#include <cmath>

#include "core/corrupted_message.h"
#include "core/faulty_env.h"
#include "gossip/decentralized_sgd.h"
#include "gossip/messages.h"
#include "gossip/push_sum.h"
#include "sim/adversary/faults.h"
#include "sim/net/simulator.h"
#include "sim/runner.h"
#include "tests/gossip/quadratic.h"
#include "topology/generators.h"
#include "topology/weights.h"

namespace murmur::sim {
namespace {

constexpr std::size_t kDim = 8;
constexpr NodeId kNodes = 8;

ParamVector Initial(NodeId i) {
  ParamVector x(kDim);
  Rng rng(3, i, RngPurpose::kGeneric);
  for (std::size_t k = 0; k < kDim; ++k) x[k] = static_cast<float>(rng.Normal() * 3);
  return x;
}

std::vector<double> InitialMean() {
  std::vector<double> m(kDim, 0);
  for (NodeId i = 0; i < kNodes; ++i)
    for (std::size_t k = 0; k < kDim; ++k) m[k] += Initial(i)[k] / kNodes;
  return m;
}

struct Averaged {
  std::vector<std::vector<float>> models;
  double weight_sum = 0;  // push-sum: sum_i w_i
  Nanos end{0};
  FaultStats faults;
  std::uint64_t rejected = 0;
};

// Pure averaging on a ring of kNodes with faults from `faults` during [0, until).
template <typename Node>
Averaged Average(const LinkFaults& faults, Nanos until, std::uint64_t rounds = 150,
                 Nanos round_timeout = std::chrono::seconds(60)) {
  Simulator simulator(SimulatorOptions{}, std::vector<DeviceProfile>(kNodes));
  constexpr bool kPushSum = std::is_same_v<Node, gossip::PushSumNode>;
  const auto ring = topology::Ring(kNodes);
  gossip::RoundTopology topo(kPushSum ? topology::PushSumWeights(ring) : topology::UniformWeights(ring));
  FaultPlan plan;
  plan.AddRule(FaultRule{kAnyNode, kAnyNode, Nanos(0), until, faults});
  std::vector<std::unique_ptr<FaultyEnv>> envs;
  std::vector<std::unique_ptr<gossip::testing::QuadraticLearner>> learners;
  std::vector<std::unique_ptr<Node>> nodes;
  std::vector<std::unique_ptr<DecodingSink>> sinks;
  for (NodeId i = 0; i < kNodes; ++i) {
    envs.push_back(std::make_unique<FaultyEnv>(&simulator.env(i), &plan));
    learners.push_back(std::make_unique<gossip::testing::QuadraticLearner>(std::vector<float>(kDim), 0.0));
    auto codec = std::make_unique<gossip::Codec>(gossip::CodecSpec::Parse("none").value(), i, Layout(),
                                                 Rng(7, i, RngPurpose::kCompression));
    if constexpr (kPushSum) {
      gossip::PushSumOptions o;
      o.rounds = rounds;
      o.round_timeout = round_timeout;
      nodes.push_back(
          std::make_unique<Node>(*envs[i], topo, *learners[i], Initial(i), std::move(codec), o, nullptr));
    } else {
      gossip::DecentralizedSgdOptions o;
      o.rounds = rounds;
      o.round_timeout = round_timeout;
      nodes.push_back(
          std::make_unique<Node>(*envs[i], topo, *learners[i], Initial(i), std::move(codec), o, nullptr));
    }
    sinks.push_back(std::make_unique<DecodingSink>(nodes.back().get(), GossipWireDecoder()));
    simulator.SetSink(i, sinks.back().get());
  }
  for (auto& n : nodes) n->Start();
  simulator.RunUntil(Nanos::max());
  Averaged out;
  out.end = simulator.now();
  for (NodeId i = 0; i < kNodes; ++i) {
    REQUIRE(nodes[i]->finished());
    out.models.emplace_back(nodes[i]->params().span().begin(), nodes[i]->params().span().end());
    if constexpr (kPushSum) out.weight_sum += nodes[i]->weight();
    out.faults += envs[i]->stats();
    out.rejected += sinks[i]->rejected();
  }
  return out;
}

// Largest |x_i[k] - mean0[k]| over nodes and coordinates.
double ErrorToInitialMean(const Averaged& a) {
  auto mean = InitialMean();
  double err = 0;
  for (const auto& m : a.models)
    for (std::size_t k = 0; k < kDim; ++k) err = std::max(err, std::abs(m[k] - mean[k]));
  return err;
}

TEST_CASE("Corrupted gossip messages are rejected by the gossip decoder, for every codec") {
  Rng rng(21);
  Layout layout;
  layout.Add("w", {40, 10});
  for (const char* spec : {"none", "fp16", "int8", "topk:0.05", "qsgd:16", "powersgd:2"}) {
    CAPTURE(spec);
    gossip::Codec codec(gossip::CodecSpec::Parse(spec).value(), 0, layout,
                        Rng(1, 0, RngPurpose::kCompression));
    ParamVector x(layout);
    for (std::size_t k = 0; k < x.size(); ++k) x[k] = static_cast<float>(rng.Normal());
    auto msg = std::make_shared<const gossip::GossipMessage>(gossip::Channel::kModel, 3, 0.0,
                                                             codec.Compress(x.span(), 3));
    REQUIRE(GossipWireDecoder()(msg->kind(),
                                [&] {
                                  std::vector<std::uint8_t> b;
                                  msg->EncodeTo(b);
                                  return b;
                                }())
                .ok());
    LinkFaults defaults;
    int rejected = 0;
    const int n = 500;
    for (int i = 0; i < n; ++i) {
      auto bad = CorruptedMessage::Make(*msg, rng, defaults.corrupt_flips, defaults.corrupt_max_cut);
      rejected += !GossipWireDecoder()(bad->kind(), bad->bytes()).ok();
    }
    // A cut tail is always caught: the decoder checks every length and
    // rejects trailing or missing bytes.
    CHECK(rejected == n);
  }
}

TEST_CASE("A flipped byte inside dense fp32 values decodes, only a cut or a header hit is caught") {
  Layout layout;
  layout.Add("w", {64});
  gossip::Codec codec(gossip::CodecSpec::Parse("none").value(), 0, layout,
                      Rng(1, 0, RngPurpose::kCompression));
  ParamVector x(layout);
  auto msg = std::make_shared<const gossip::GossipMessage>(gossip::Channel::kModel, 0, 0.0,
                                                           codec.Compress(x.span(), 0));
  std::vector<std::uint8_t> bytes;
  msg->EncodeTo(bytes);
  bytes[bytes.size() - 2] ^= 0x40;  // the exponent byte of the last float
  auto decoded = GossipWireDecoder()(msg->kind(), bytes);
  REQUIRE(decoded.ok());
  const auto& g = static_cast<const gossip::GossipMessage&>(**decoded);
  std::vector<float> out(64, 0.0f);
  REQUIRE(g.update().AddTo(out).ok());
  CHECK(out[63] != 0.0f);  // garbage that no decoder can tell from a model
}

TEST_CASE(
    "Under duplicate, reorder and delay D-PSGD is bit-identical to the fault-free run and push-sum equal "
    "within rounding") {
  LinkFaults f;
  f.duplicate = 0.3;
  f.reorder = 0.3;
  f.delay = std::chrono::milliseconds(2);
  f.delay_jitter = std::chrono::milliseconds(20);
  const Nanos always = Nanos::max();
  auto clean_d = Average<gossip::DecentralizedSgdNode>(LinkFaults{}, always);
  auto faulty_d = Average<gossip::DecentralizedSgdNode>(f, always);
  CHECK(faulty_d.faults.duplicated > 100);
  CHECK(faulty_d.faults.reordered > 100);
  CHECK(faulty_d.models == clean_d.models);
  CHECK(faulty_d.end > clean_d.end);  // the faults did slow it down
  auto clean_p = Average<gossip::PushSumNode>(LinkFaults{}, always);
  auto faulty_p = Average<gossip::PushSumNode>(f, always);
  CHECK(faulty_p.faults.duplicated > 100);
  // A duplicate that arrives after its round closed takes push-sum's late
  // path, x += sigma - rho with sigma == rho: no mass, but x - a + a rounds in
  // float at the scale of the running sum a (about rounds x |x| / 3 = 150),
  // one ulp of which is 1.5e-5; a few such errors stay far below 1e-3. The
  // weights (doubles, w += 0 exactly) stay exact. Measured: 5.7e-6 (release),
  // 2.3e-5 (the asan build's codegen).
  CHECK(faulty_p.weight_sum == clean_p.weight_sum);
  double diff = 0;
  for (NodeId i = 0; i < kNodes; ++i)
    for (std::size_t k = 0; k < kDim; ++k)
      diff = std::max(diff, double{std::abs(faulty_p.models[i][k] - clean_p.models[i][k])});
  CHECK(diff < 1e-3);
  CHECK(ErrorToInitialMean(clean_p) < 1e-4);
  CHECK(ErrorToInitialMean(clean_d) < 1e-4);
}

TEST_CASE(
    "Push-sum conserves mass through drops, duplicates, reordering and corruption, and D-PSGD does not") {
  LinkFaults f;
  f.drop = 0.1;
  f.duplicate = 0.1;
  f.reorder = 0.1;
  f.corrupt = 0.05;
  const Nanos timeout = std::chrono::milliseconds(50);
  // Faults during the first half of the fault-free run's length.
  const Nanos half = Average<gossip::PushSumNode>(LinkFaults{}, Nanos(0), 150, timeout).end / 2;
  for (std::uint64_t repeat = 0; repeat < 1; ++repeat) {
    auto p = Average<gossip::PushSumNode>(f, half, 150, timeout);
    CHECK(p.faults.dropped > 20);
    CHECK(p.faults.corrupted > 10);
    CHECK(p.rejected == p.faults.corrupted);
    // sum_i w_i = n: running sums re-deliver lost mass, and a duplicate or an
    // overtaken running sum adds nothing.
    CHECK(std::abs(p.weight_sum - kNodes) < 1e-9);
    CHECK(ErrorToInitialMean(p) < 1e-4);
    // D-PSGD reaches consensus, but a lost model's weight stays on its
    // receiver, so the consensus value is not the initial mean.
    auto d = Average<gossip::DecentralizedSgdNode>(f, half, 150, timeout);
    CHECK(d.faults.dropped > 20);
    double spread = 0;
    for (const auto& m : d.models)
      for (std::size_t k = 0; k < kDim; ++k)
        spread = std::max(spread, double{std::abs(m[k] - d.models[0][k])});
    CHECK(spread < 1e-3);
    CHECK(ErrorToInitialMean(d) > 1e-2);
  }
}

proto::Scenario SmallFaulty() {
  proto::Scenario s;
  s.mutable_spec()->set_dataset("synthetic:blobs");
  s.mutable_spec()->set_model("mlp:16");
  s.mutable_spec()->set_nodes(8);
  s.mutable_spec()->set_rounds(60);
  s.mutable_spec()->set_eval_every(20);
  s.set_eval_samples(500);
  s.mutable_spec()->set_lr(0.1);
  s.mutable_spec()->set_compression("none");
  s.mutable_spec()->set_round_timeout(0.2);
  s.mutable_faults()->set_drop(0.05);
  s.mutable_faults()->set_duplicate(0.1);
  s.mutable_faults()->set_reorder(0.1);
  s.mutable_faults()->set_corrupt(0.02);
  s.mutable_faults()->set_delay_jitter(5 / 1000.0);
  return s;
}

TEST_CASE("A scenario with faults gives the same metrics for 1 and 2 threads and counts its faults") {
  for (std::string algorithm : {"dpsgd", "push-sum", "gossip-learning"}) {
    CAPTURE(algorithm);
    proto::Scenario s = SmallFaulty();
    s.mutable_spec()->set_algorithm(algorithm);
    s.mutable_spec()->set_period(0.05);
    s.set_threads(1);
    auto one = RunScenario(s).value();
    s.set_threads(2);
    auto two = RunScenario(s).value();
    REQUIRE(one.points.size() == two.points.size());
    for (std::size_t i = 0; i < one.points.size(); ++i) {
      EvalPoint x = one.points[i], y = two.points[i];
      x.wall_s = y.wall_s = 0;
      CHECK(CsvRow(x) == CsvRow(y));
    }
    CHECK(one.faults.dropped == two.faults.dropped);
    CHECK(one.faults.dropped > 0);
    CHECK(one.faults.duplicated > 0);
    CHECK(one.faults.corrupted > 0);
    CHECK(one.corrupt_rejected == one.faults.corrupted);
    CHECK(one.points.back().avg_acc > 0.5);  // 10 blobs: chance is 0.1
  }
}

TEST_CASE("Faults combine with gossip attackers, and every corrupted message meets a decoder") {
  proto::Scenario s = SmallFaulty();
  s.mutable_spec()->set_nodes(12);
  s.mutable_spec()->set_rounds(40);
  s.mutable_spec()->set_attack("sign-flip");
  s.mutable_spec()->set_attack_fraction(0.2);
  s.mutable_spec()->set_gossip_aggregation("clipped");
  s.mutable_faults()->set_corrupt(0.2);
  auto r = RunScenario(s).value();
  CHECK(r.rounds_done == 40);
  CHECK(r.faults.corrupted > 50);
  CHECK(r.corrupt_rejected <= r.faults.corrupted);
  CHECK(r.points.back().avg_acc > 0.5);
  // The run stops once the slowest node has finished round 40, with the
  // next round's first messages still on their way (held, delayed or in
  // the network). The same run half a second longer is the same until then
  // (sim/runner.cc), and by then each copy corrupted before the stop has
  // met a decoder and been refused, the attackers' inboxes included.
  s.mutable_spec()->set_rounds(1000);
  s.set_time_budget(r.virtual_s + 0.5);
  auto later = RunScenario(s).value();
  CHECK(later.corrupt_rejected >= r.faults.corrupted);
  CHECK(later.corrupt_rejected <= later.faults.corrupted);
  CHECK(later.corrupt_accepted == 0);
}

TEST_CASE("Bad fault fields are named") {
  proto::Scenario s = SmallFaulty();
  s.mutable_faults()->set_drop(1.0);
  auto r = RunScenario(s);
  REQUIRE(!r.ok());
  CHECK(r.status().message().find("fault field 'drop'") != std::string::npos);
  s = SmallFaulty();
  s.mutable_faults()->set_partition("0-3|4-9");
  r = RunScenario(s);
  REQUIRE(!r.ok());
  CHECK(r.status().message().find("fault field 'partition'") != std::string::npos);
  s = SmallFaulty();
  s.mutable_spec()->set_algorithm("fedavg");
  s.mutable_spec()->set_clients_per_round(0);
  r = RunScenario(s);
  REQUIRE(!r.ok());
  CHECK(r.status().message().find("scenario field 'faults'") != std::string::npos);
}

TEST_CASE("Partition then heal: both halves train, consensus distance rises and falls, the job finishes") {
  proto::Scenario s;
  s.mutable_spec()->set_dataset("synthetic:blobs");
  s.mutable_spec()->set_model("mlp:16");
  s.mutable_spec()->set_nodes(8);
  s.mutable_spec()->set_partition("dirichlet:0.3");  // the halves hold different classes, so they drift apart
  s.mutable_spec()->set_rounds(150);
  s.mutable_spec()->set_eval_every(5);
  s.set_eval_samples(500);
  s.mutable_spec()->set_compression("none");
  s.mutable_spec()->set_round_timeout(0.2);
  s.mutable_faults()->set_partition("0-3|4-7@0.5s-4.5s");  // a ring: edges 3-4 and 7-0 cross
  s.set_threads(1);
  auto r = RunScenario(s).value();
  CHECK(r.rounds_done == 150);
  const EvalPoint* before = nullptr;  // last point before the partition
  const EvalPoint* during = nullptr;  // last point inside it
  double peak = 0;
  for (const EvalPoint& p : r.points) {
    if (p.virtual_s <= 0.5) before = &p;
    if (p.virtual_s > 0.5 && p.virtual_s < 4.5) {
      during = &p;
      peak = std::max(peak, p.consensus);
    }
  }
  REQUIRE(before != nullptr);
  REQUIRE(during != nullptr);
  const EvalPoint& last = r.points.back();
  CAPTURE(before->consensus);
  CAPTURE(peak);
  CAPTURE(last.consensus);
  // Both halves keep training: rounds advance (each waits out the timeout for
  // its cross-partition neighbour) and accuracy rises.
  CHECK(during->round >= before->round + 15);
  CHECK(during->acc_mean > before->acc_mean);
  CHECK(peak > 1.5 * before->consensus);
  CHECK(last.consensus < peak / 3);
  CHECK(last.avg_acc > 0.9);
  // Four directed cross edges, one message each per round in the window.
  CHECK(r.faults.partitioned >= 4 * (during->round - before->round));
  CHECK(r.faults.partitioned <= 4 * (during->round - before->round + 10));
}

}  // namespace
}  // namespace murmur::sim
