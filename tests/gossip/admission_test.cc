// What a gossip node checks in a neighbour's update before it uses it
// (gossip/admission.h, docs/security.md "Insiders"): each refusal against
// values worked by hand, and on a simulated ring an insider whose every
// model is refused leaves the honest nodes' models exactly as a neighbour
// that sent nothing would, counted by reason, without waiting for timeouts.
#include "gossip/admission.h"

#include <doctest/doctest.h>

#include <array>
#include <cmath>
#include <limits>
#include <memory>
#include <vector>

#include "compression/values.h"
#include "core/manual_env.h"
#include "core/rng.h"
#include "gossip/decentralized_sgd.h"
#include "gossip/gossip_learning.h"
#include "gossip/gradient_tracking.h"
#include "sim/net/simulator.h"
#include "tests/gossip/fixture.h"
#include "tests/gossip/quadratic.h"
#include "topology/generators.h"
#include "topology/weights.h"

namespace murmur::gossip {
namespace {

using compression::Update;
using testing::Fixture;
using testing::kDim;

UpdateAdmission Admission(const std::string& codec, double rho = 10) {
  return UpdateAdmission(CodecSpec::Parse(codec).value(), rho);
}

Update DenseOf(std::vector<float> v, compression::ValueType type = compression::ValueType::kF32) {
  compression::ValueCoding coding;
  coding.type = type;
  return Update::Dense(v.size(), compression::PackValues(v, {}, coding, 0));
}

TEST_CASE("An update of another size or another encoding than the job's codec sends is refused") {
  const UpdateAdmission none = Admission("none");
  CHECK(!none.Check(DenseOf({1, 2, 3}), 3).has_value());
  CHECK(none.Check(DenseOf({1, 2}), 3) == Refusal::kWrongLength);
  // A sparse update in a dense job, and fp16 values in an fp32 job.
  const Update sparse = Update::Sparse(3, {1}, compression::PackValues(std::vector<float>{5}, {}, {}, 0));
  CHECK(none.Check(sparse, 3) == Refusal::kWrongEncoding);
  CHECK(none.Check(DenseOf({1, 2, 3}, compression::ValueType::kF16), 3) == Refusal::kWrongEncoding);
  // The fp16 job takes fp16 and refuses fp32; CHOCO's resynchronisation is fp32 whatever the codec.
  const UpdateAdmission fp16 = Admission("fp16");
  CHECK(!fp16.Check(DenseOf({1, 2, 3}, compression::ValueType::kF16), 3).has_value());
  CHECK(fp16.Check(DenseOf({1, 2, 3}), 3) == Refusal::kWrongEncoding);
  CHECK(!fp16.Check(DenseOf({1, 2, 3}), 3, /*fp32=*/true).has_value());
  CHECK(fp16.Check(DenseOf({1, 2, 3}, compression::ValueType::kF16), 3, /*fp32=*/true) ==
        Refusal::kWrongEncoding);
  // A sparsifying codec sends sparse updates: they are its own.
  CHECK(!Admission("topk:0.5,choco").Check(sparse, 3).has_value());
}

TEST_CASE("NaN and infinite values are refused, the largest finite floats are not (they are implausible)") {
  const UpdateAdmission a = Admission("none");
  const float inf = std::numeric_limits<float>::infinity(), big = std::numeric_limits<float>::max();
  CHECK(a.Check(DenseOf({1, std::nanf(""), 3}), 3) == Refusal::kNotFinite);
  CHECK(a.Check(DenseOf({1, inf, 3}), 3) == Refusal::kNotFinite);
  CHECK(a.Check(DenseOf({-inf, inf, 3}), 3) == Refusal::kNotFinite);
  // Their float sum overflows; in double it does not.
  CHECK(!a.Check(DenseOf({big, big, big}), 3).has_value());
  const std::vector<float> own = {3, 4, 0};
  CHECK(a.Judge(std::vector<float>{big, big, big}, own) == Refusal::kImplausible);
  CHECK(a.Judge(std::vector<float>{1e30f, 0, 0}, own) == Refusal::kImplausible);
  // Judged when mixed: NaN or infinity anywhere, in any block, is not finite.
  std::vector<float> mine(5000, 1.0f), theirs(5000, 1.0f);
  CHECK(!a.Judge(theirs, mine).has_value());
  theirs[4500] = std::nanf("");
  CHECK(a.Judge(theirs, mine) == Refusal::kNotFinite);
  theirs[4500] = -inf;
  CHECK(a.Judge(theirs, mine) == Refusal::kNotFinite);
  // Whole models judged when mixed are not scanned on arrival.
  CHECK(!a.Check(DenseOf({1, std::nanf(""), 3}), 3, false, /*values=*/false).has_value());
}

TEST_CASE("Mixing and judging in one pass adds what AddTo adds and never accepts what Judge refuses") {
  Rng rng(5, 0, RngPurpose::kInit);
  for (const std::size_t n :
       {std::size_t{1}, std::size_t{15}, std::size_t{16}, std::size_t{33}, std::size_t{5000}}) {
    CAPTURE(n);
    std::vector<float> v(n), base(n);
    for (std::size_t i = 0; i < n; ++i) {
      v[i] = static_cast<float>(rng.Normal()) * 3;
      base[i] = static_cast<float>(rng.Normal());
    }
    // The sum is the same bits as AddTo's; the norm is BlockSquaredNorm's, near the exact one.
    std::vector<float> fused = base, reference = base;
    const double norm2 = AddScaledSquaredNorm(fused.data(), v.data(), n, 0.25f);
    REQUIRE(compression::DenseF32Update(v)->AddTo(reference, 0.25f).ok());
    CHECK(fused == reference);
    CHECK(norm2 == BlockSquaredNorm(v));
    long double exact = 0;
    for (const float e : v) exact += static_cast<long double>(e) * e;
    CHECK(norm2 == doctest::Approx(static_cast<double>(exact)).epsilon(1e-5));
    CHECK(AllFinite(v));
    // A NaN or an infinity anywhere, in the first block, in the middle or at the end.
    for (const std::size_t at : {std::size_t{0}, n / 2, n - 1}) {
      for (const float bad : {std::nanf(""), std::numeric_limits<float>::infinity()}) {
        std::vector<float> w = v;
        w[at] = bad;
        CHECK_FALSE(AllFinite(w));
        fused = base;
        CHECK_FALSE(std::isfinite(AddScaledSquaredNorm(fused.data(), w.data(), n, 1.0f)));
      }
    }
  }
  // SurelyPlausible is a shortcut of Judge: on models scaled towards and past the
  // bound it never accepts one that Judge refuses, and it accepts the ordinary ones.
  const UpdateAdmission a = Admission("none", 10);
  std::vector<float> own(3000), theirs(3000);
  for (std::size_t i = 0; i < own.size(); ++i) {
    own[i] = static_cast<float>(rng.Normal());
    theirs[i] = static_cast<float>(rng.Normal());
  }
  const double own2 = BlockSquaredNorm(own);
  int surely = 0;
  for (double scale = 0.5; scale < 20; scale *= 1.01) {
    std::vector<float> t = theirs;
    for (float& e : t) e = static_cast<float>(e * scale);
    std::vector<float> sink(t.size());
    const double t2 = AddScaledSquaredNorm(sink.data(), t.data(), t.size(), 1);
    if (!a.SurelyPlausible(t2, own2)) continue;
    ++surely;
    CHECK_FALSE(a.Judge(t, own).has_value());
  }
  CHECK(surely > 100);  // up to about 9 ||x_i||: 0.5 to 8.99 by 1 % steps is 290 scales
  CHECK(a.SurelyPlausible(own2, own2));
  CHECK_FALSE(a.SurelyPlausible(std::numeric_limits<double>::infinity(), own2));
  CHECK_FALSE(a.SurelyPlausible(own2, 0));                // a zero model: only Judge decides
  CHECK(Admission("none", 0).SurelyPlausible(1e300, 1));  // no bound
}

TEST_CASE("The plausibility bound is ||x_j - x_i|| <= rho ||x_i||, at the boundary and on either side") {
  // ||x_i|| = 5: with rho = 10 the bound is a distance of 50.
  const std::vector<float> own = {3, 4};
  const UpdateAdmission a = Admission("none", 10);
  CHECK(!a.Judge(std::vector<float>{3, 54}, own).has_value());                  // distance 50 exactly
  CHECK(a.Judge(std::vector<float>{3, 54.01f}, own) == Refusal::kImplausible);  // just past it
  CHECK(!a.Judge(std::vector<float>{-27, -36}, own).has_value());               // -9 x_i: distance 10 ||x_i||
  CHECK(a.Judge(std::vector<float>{-150, -200}, own) == Refusal::kImplausible);       // -50 x_i
  CHECK(!Admission("none", 0).Judge(std::vector<float>{1e30f, 0}, own).has_value());  // rho = 0: no bound
  // A zero model cannot judge a distance.
  CHECK(!a.Judge(std::vector<float>{1e30f, 0}, std::vector<float>{0, 0}).has_value());
}

// Nodes 0 and 1 are honest D-PSGD nodes of a 3-node ring (every weight 1/3);
// node 2 is an insider that answers each model it gets with `craft(x)` for
// the same round (nothing when craft returns null).
// `claim` > 0: its answers to round 2 also carry a copy labelled round `claim`.
struct Insider final : public MessageSink {
  sim::Simulator* sim = nullptr;
  std::function<UpdatePtr(std::span<const float>)> craft;
  std::uint64_t claim = 0;
  void OnMessage(NodeId from, MessagePtr msg) override {
    const auto& m = static_cast<const GossipMessage&>(*msg);
    UpdatePtr u = craft(m.update().ToDense());
    if (u == nullptr) return;
    sim->env(2).Send(from, std::make_shared<const GossipMessage>(Channel::kModel, m.round(), 0.0, u));
    if (claim > 0 && m.round() == 2)
      sim->env(2).Send(from, std::make_shared<const GossipMessage>(Channel::kModel, claim, 0.0, u));
  }
};

struct RoundCounter final : public RoundObserver {
  std::vector<std::uint64_t> rounds = std::vector<std::uint64_t>(3, 0);
  void OnRoundDone(NodeId node, std::uint64_t, double) override { ++rounds[node]; }
};

// The two honest nodes 0 and 1 of a 3-node insider ring: node i minimizes
// ||x - b_i||^2 / 2 from x0 = b_i, b_0 = (1, 2, -3), b_1 = (5, 2, -3).
template <typename NodeT, typename Options>
std::vector<std::unique_ptr<NodeT>> HonestPair(
    sim::Simulator& sim, RoundTopology& topo, const Options& o, RoundObserver* observer,
    std::vector<std::unique_ptr<testing::QuadraticLearner>>& learners) {
  std::vector<std::unique_ptr<NodeT>> nodes;
  for (NodeId i = 0; i < 2; ++i) {
    std::vector<float> b = {i == 0 ? 1.0f : 5.0f, 2.0f, -3.0f};
    learners.push_back(std::make_unique<testing::QuadraticLearner>(b, 0.1));
    ParamVector x0(3);
    for (std::size_t k = 0; k < 3; ++k) x0[k] = b[k];
    nodes.push_back(
        std::make_unique<NodeT>(sim.env(i), topo, *learners.back(), std::move(x0),
                                std::make_unique<Codec>(CodecSpec::Parse("none").value(), i, Layout(),
                                                        Rng(7, i, RngPurpose::kCompression)),
                                o, observer));
    sim.SetSink(i, nodes.back().get());
  }
  return nodes;
}

struct InsiderRing {
  std::vector<std::vector<float>> models;
  std::array<std::uint64_t, kRefusalKinds> refused{};
  double virtual_s = 0;
  // What each honest node's round waits for 1 s in (WaitingFor), and at the end.
  std::vector<std::vector<NodeId>> waiting_at_1s, waiting_at_end;

  RoundCounter counter;  // rounds each honest node mixed

  explicit InsiderRing(std::function<UpdatePtr(std::span<const float>)> craft, double rho = 10,
                       std::uint64_t claim = 0) {
    sim::Simulator sim(sim::SimulatorOptions{}, std::vector<sim::DeviceProfile>(3));
    RoundTopology topo(topology::UniformWeights(topology::Ring(3)));
    Insider insider;
    insider.sim = &sim;
    insider.craft = std::move(craft);
    insider.claim = claim;
    sim.SetSink(2, &insider);
    DecentralizedSgdOptions o;
    o.rounds = 20;
    o.plausibility = rho;
    o.round_timeout = std::chrono::seconds(30);
    o.catch_up = true;  // as on a daemon
    std::vector<std::unique_ptr<testing::QuadraticLearner>> learners;
    auto nodes = HonestPair<DecentralizedSgdNode>(sim, topo, o, &counter, learners);
    for (auto& n : nodes) n->Start();
    sim.RunUntil(std::chrono::seconds(1));
    for (auto& n : nodes) waiting_at_1s.push_back(n->WaitingFor());
    sim.RunUntil(Nanos::max());
    for (auto& n : nodes) {
      REQUIRE(n->finished());
      waiting_at_end.push_back(n->WaitingFor());
      models.emplace_back(n->params().span().begin(), n->params().span().end());
    }
    refused = sim.TotalTraffic().refused;
    virtual_s = std::chrono::duration<double>(sim.now()).count();
  }
};

TEST_CASE(
    "An insider whose every model is refused changes the honest models exactly as a silent one, without "
    "timeouts") {
  // The reference: node 2 sends nothing, so its weight stays on the
  // receiver; its first 3 rounds end on their timeout (30 s), and from then
  // on node 2, silent 3 rounds in a row, is no longer waited for.
  const InsiderRing silent([](std::span<const float>) { return UpdatePtr(); });
  CHECK(silent.virtual_s > 3 * 30);
  CHECK(silent.virtual_s < 4 * 30);
  // 1 s into round 0 both honest nodes have each other's model and wait for node 2's
  // (what `murmur job status` shows); at the end nobody waits.
  CHECK(silent.waiting_at_1s == std::vector<std::vector<NodeId>>{{2}, {2}});
  CHECK(silent.waiting_at_end == std::vector<std::vector<NodeId>>{{}, {}});
  struct Case {
    const char* what;
    Refusal why;
    std::function<UpdatePtr(std::span<const float>)> craft;
  };
  const std::vector<Case> cases = {
      {"1e30 everywhere", Refusal::kImplausible,
       [](std::span<const float> x) {
         return compression::DenseF32Update(std::vector<float>(x.size(), 1e30f));
       }},
      {"-50 x", Refusal::kImplausible,
       [](std::span<const float> x) {
         std::vector<float> v(x.begin(), x.end());
         for (float& e : v) e *= -50;
         return compression::DenseF32Update(v);
       }},
      {"NaN", Refusal::kNotFinite,
       [](std::span<const float> x) {
         return compression::DenseF32Update(std::vector<float>(x.size(), std::nanf("")));
       }},
      {"a sparse update", Refusal::kWrongEncoding,
       [](std::span<const float> x) {
         return std::make_shared<const Update>(
             Update::Sparse(x.size(), {0}, compression::PackValues(std::vector<float>{1e3f}, {}, {}, 0)));
       }},
      {"one value too few", Refusal::kWrongLength,
       [](std::span<const float> x) { return compression::DenseF32Update(x.subspan(1)); }},
  };
  for (const Case& c : cases) {
    CAPTURE(c.what);
    const InsiderRing attacked(c.craft);
    CHECK(attacked.models == silent.models);
    // Every model it sent (one to each honest node per round) refused, for its reason only.
    for (std::size_t k = 0; k < kRefusalKinds; ++k)
      CHECK(attacked.refused[k] == (k == static_cast<std::size_t>(c.why) ? 40u : 0u));
    if (c.why != Refusal::kImplausible) {
      // Refused on arrival: no round waits its 30 s timeout.
      CHECK(attacked.virtual_s < 30);
    }
  }
  // Without the bound the -50 x model is mixed and the honest models go their way.
  const InsiderRing unbounded(cases[1].craft, 0);
  CHECK(unbounded.models != silent.models);
  CHECK(unbounded.refused[static_cast<std::size_t>(Refusal::kImplausible)] == 0);
}

TEST_CASE(
    "Gossip learning refuses a model by length, encoding, values, age and distance, and merges the rest") {
  // One node whose own model is 1 everywhere (||x|| = sqrt(8)), rho = 2: a
  // model within 2 sqrt(8) of it is merged, age-weighted (own age 0: the
  // model is taken whole); anything else is refused for its reason.
  Fixture f(1, 0.05);
  GossipLearningOptions o;
  o.uniform_peers = true;
  o.plausibility = 2;
  ManualEnv env(0);
  ParamVector x0(kDim);
  for (std::size_t k = 0; k < kDim; ++k) x0[k] = 1;
  GossipLearningNode node(env, nullptr, 2, *f.learners[0], std::move(x0), f.MakeCodec("none", 0), o, nullptr);
  const auto model = [](std::vector<float> v, double age) {
    return std::make_shared<const GossipMessage>(Channel::kGossipModel, 0, age,
                                                 compression::DenseF32Update(std::move(v)));
  };
  const std::vector<float> far(kDim, 6.0f);  // 5 from x in each of 8 values: 5 sqrt(8) > 2 sqrt(8)
  struct Case {
    MessagePtr msg;
    Refusal why;
  };
  const std::vector<Case> cases = {
      {model(std::vector<float>(kDim - 1, 1.0f), 1), Refusal::kWrongLength},
      {std::make_shared<const GossipMessage>(
           Channel::kGossipModel, 0, 1.0,
           std::make_shared<const Update>(
               DenseOf(std::vector<float>(kDim, 1.0f), compression::ValueType::kF16))),
       Refusal::kWrongEncoding},
      {model(std::vector<float>(kDim, std::nanf("")), 1), Refusal::kNotFinite},
      {model(std::vector<float>(kDim, 1.0f), std::numeric_limits<double>::infinity()), Refusal::kImplausible},
      {model(std::vector<float>(kDim, 1.0f), -1), Refusal::kImplausible},
      {model(far, 1), Refusal::kImplausible},
  };
  for (std::size_t c = 0; c < cases.size(); ++c) {
    CAPTURE(c);
    node.OnMessage(1, cases[c].msg);
    REQUIRE(env.refused().size() == c + 1);
    CHECK(env.refused()[c] == std::pair<NodeId, Refusal>{1, cases[c].why});
  }
  for (std::size_t k = 0; k < kDim; ++k) CHECK(node.params()[k] == 1.0f);  // nothing merged
  // 1 + 2 sqrt(8) / sqrt(8) - a little: within the bound, and merged whole.
  node.OnMessage(1, model(std::vector<float>(kDim, 2.99f), 1));
  CHECK(env.refused().size() == cases.size());
  for (std::size_t k = 0; k < kDim; ++k) CHECK(node.params()[k] == 2.99f);
}

// DSGT on the same ring: node 2 answers each model with `model(x)` and
// each tracker with `tracker(y)` (nothing for a null function).
// `claim` > 0: its answers to round 2 also carry copies labelled every round
// from `claim` to 19 (of 20).
struct DsgtInsider final : public MessageSink {
  sim::Simulator* sim = nullptr;
  std::function<UpdatePtr(std::span<const float>)> model, tracker;
  std::uint64_t claim = 0;
  void OnMessage(NodeId from, MessagePtr msg) override {
    const auto& m = static_cast<const GossipMessage&>(*msg);
    const auto& craft = m.channel() == Channel::kModel ? model : tracker;
    if (craft == nullptr) return;
    UpdatePtr u = craft(m.update().ToDense());
    sim->env(2).Send(from, std::make_shared<const GossipMessage>(m.channel(), m.round(), 0.0, u));
    for (std::uint64_t r = claim; claim > 0 && m.round() == 2 && r < 20; ++r)
      sim->env(2).Send(from, std::make_shared<const GossipMessage>(m.channel(), r, 0.0, u));
  }
};

struct DsgtRun {
  std::vector<std::vector<float>> models;
  std::array<std::uint64_t, kRefusalKinds> refused{};
  RoundCounter counter;  // rounds each honest node combined
  double virtual_s = 0;
};

DsgtRun RunDsgtWithInsider(std::function<UpdatePtr(std::span<const float>)> model,
                           std::function<UpdatePtr(std::span<const float>)> tracker, double rho = 10,
                           std::uint64_t claim = 0, bool catch_up = false) {
  sim::Simulator sim(sim::SimulatorOptions{}, std::vector<sim::DeviceProfile>(3));
  RoundTopology topo(topology::UniformWeights(topology::Ring(3)));
  DsgtInsider insider;
  insider.sim = &sim;
  insider.model = std::move(model);
  insider.tracker = std::move(tracker);
  insider.claim = claim;
  sim.SetSink(2, &insider);
  GradientTrackingOptions o;
  o.rounds = 20;
  o.round_timeout = std::chrono::seconds(5);
  o.plausibility = rho;
  o.catch_up = catch_up || claim > 0;  // as on a daemon
  std::vector<std::unique_ptr<testing::QuadraticLearner>> learners;
  DsgtRun out;
  auto nodes = HonestPair<GradientTrackingNode>(sim, topo, o, &out.counter, learners);
  for (auto& n : nodes) n->Start();
  sim.RunUntil(Nanos::max());
  for (auto& n : nodes) {
    REQUIRE(n->finished());
    out.models.emplace_back(n->params().span().begin(), n->params().span().end());
  }
  out.refused = sim.TotalTraffic().refused;
  out.virtual_s = std::chrono::duration<double>(sim.now()).count();
  return out;
}

TEST_CASE("A silent DSGT neighbour costs 3 round timeouts with catch-up, not one a round") {
  // Node 2 sends nothing; the round timeout is 5 s and the job 20 rounds.
  // Without catch-up (the simulator) each round waits for it: 100 s. With
  // catch-up (murmurd) the first 3 rounds do, then it is not waited for.
  const DsgtRun plain = RunDsgtWithInsider(nullptr, nullptr);
  CHECK(plain.virtual_s >= 20 * 5);
  const DsgtRun daemon = RunDsgtWithInsider(nullptr, nullptr, 10, 0, true);
  CHECK(daemon.counter.rounds[0] == 20);
  CHECK(daemon.counter.rounds[1] == 20);
  CHECK(daemon.virtual_s > 3 * 5);
  CHECK(daemon.virtual_s < 4 * 5);
}

TEST_CASE(
    "A DSGT insider's absurd models and broken trackers are refused: the honest nodes end as with a silent "
    "one") {
  // Models of 1e30 and trackers of NaN are refused when the round is
  // combined, trackers of the wrong length on arrival; with both refused every round the
  // honest nodes' arithmetic is a silent neighbour's, bit for bit.
  const DsgtRun silent = RunDsgtWithInsider(nullptr, nullptr);
  const auto huge = [](std::span<const float> x) {
    return compression::DenseF32Update(std::vector<float>(x.size(), 1e30f));
  };
  const auto nan = [](std::span<const float> y) {
    return compression::DenseF32Update(std::vector<float>(y.size(), std::nanf("")));
  };
  const auto short_by_one = [](std::span<const float> y) {
    return compression::DenseF32Update(y.subspan(1));
  };
  for (const bool nan_trackers : {true, false}) {
    CAPTURE(nan_trackers);
    const DsgtRun attacked = RunDsgtWithInsider(huge, nan_trackers ? nan : short_by_one);
    CHECK(attacked.models == silent.models);
    // One model and one tracker to each of the two honest nodes every round.
    CHECK(attacked.refused[static_cast<std::size_t>(Refusal::kImplausible)] == 40);
    CHECK(attacked.refused[static_cast<std::size_t>(nan_trackers ? Refusal::kNotFinite
                                                                 : Refusal::kWrongLength)] == 40);
  }
  // Without the bound the 1e30 models are mixed (the trackers still refused).
  const DsgtRun unbounded = RunDsgtWithInsider(huge, nan, 0);
  CHECK(unbounded.models != silent.models);
}

TEST_CASE("Honest neighbours' models pass: a ring of honest nodes mixes as without the bound") {
  const auto honest = [](std::span<const float> x) { return compression::DenseF32Update(x); };
  const InsiderRing bounded(honest, 10), unbounded(honest, 0);
  CHECK(bounded.models == unbounded.models);
  for (std::uint64_t n : bounded.refused) CHECK(n == 0);
}

}  // namespace
}  // namespace murmur::gossip

namespace murmur::gossip {
namespace {

TEST_CASE("One neighbour's message labelled a late round makes nobody skip: a catch-up needs a majority") {
  const auto honest = [](std::span<const float> x) { return compression::DenseF32Update(x); };
  const InsiderRing plain(honest);
  // At round 2 the insider also sends a model labelled round 18 of 20.
  const InsiderRing steered(honest, 10, 18);
  CHECK(steered.counter.rounds[0] == 20);
  CHECK(steered.counter.rounds[1] == 20);
  CHECK(plain.counter.rounds[0] == 20);
  // DSGT with catch-up: at round 2 the insider also sends models and
  // trackers labelled every round from 10 to 19: one neighbour's claims.
  // Each honest node combines all 20 rounds; before, it jumped to round 19
  // at round 3 and combined 4.
  const auto same = [](std::span<const float> x) { return compression::DenseF32Update(x); };
  const DsgtRun dsgt = RunDsgtWithInsider(same, same, 10, 10);
  CHECK(dsgt.counter.rounds[0] == 20);
  CHECK(dsgt.counter.rounds[1] == 20);
}

}  // namespace
}  // namespace murmur::gossip
