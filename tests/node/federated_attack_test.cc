// Simulated attackers in federated jobs on murmurd (node/job/federated_job.h,
// docs/daemon.md "Simulated attacks"): in-process daemons on loopback. The
// truth is `murmur sim` of the same configuration: the same clients attack
// (drawn from the job seed), a sign-flip attacker daemon sends its own
// poisoned update, the aggregator plays the omniscient ALIE attackers as the
// simulator's server does, so the global models must agree bit for bit; and
// the simulator's accuracy gap between a robust rule and the mean under
// attack sets how much the robust rule must win by on the daemons.
#include <doctest/doctest.h>

#include <chrono>
#include <cmath>
#include <string>

#include "engine/federated_builder.h"
#include "federated/attack.h"
#include "node/job/federated_job.h"
#include "sim/run/federated_run.h"
#include "tests/node/fed_fleet.h"

namespace murmur::node {
namespace {

using testing::BlobsJob;
using testing::FedFleet;
using testing::ScenarioOf;

// Five clients (six daemons, aggregator 2), two of them attackers: attack_fraction
// 0.4 of 5, as the simulator draws them from the seed.
proto::JobConfig AttackJob(const std::string& attack, double scale, const std::string& robust) {
  proto::JobConfig job = BlobsJob("attack", "fedavg", 2, 6);
  job.mutable_spec()->set_attack(attack);
  job.mutable_spec()->set_attack_fraction(0.4);
  job.mutable_spec()->set_attack_scale(scale);
  job.mutable_spec()->set_robust(robust);
  return job;
}

proto::Scenario AttackScenario(const proto::JobConfig& job) {
  proto::Scenario s = ScenarioOf(job);
  s.mutable_spec()->set_attack(job.spec().attack());
  s.mutable_spec()->set_attack_fraction(job.spec().attack_fraction());
  s.mutable_spec()->set_attack_scale(job.spec().attack_scale());
  s.mutable_spec()->set_robust(job.spec().robust());
  return s;
}

struct Outcome {
  std::vector<float> model;
  double accuracy = 0;
  std::string metrics;  // the aggregator's /metrics (daemons)
};

Outcome OnDaemons(const proto::JobConfig& job) {
  FedFleet fleet(DaemonsOf(job));
  fleet.SubmitAll(job);
  REQUIRE(fleet.WaitDone(std::chrono::seconds(60)));
  Outcome o;
  o.accuracy = fleet.Status(job.aggregator()).test_accuracy();
  o.metrics = testing::Metrics(fleet.daemons[job.aggregator()]->metrics_port());
  fleet.Stop();
  o.model = fleet.daemons[job.aggregator()]->params();
  return o;
}

// `refused`: the crafted results the simulator's server must refuse (none are late).
Outcome InSim(const proto::Scenario& s, std::uint64_t refused = 0) {
  sim::FederatedStats stats;
  auto run = sim::RunFederatedScenario(s, {}, &stats);
  REQUIRE_MESSAGE(run.ok(), run.status().ToString());
  REQUIRE(stats.results_dropped == refused);
  REQUIRE(run->refused[static_cast<std::size_t>(Refusal::kImplausible)] == refused);
  return {stats.final_model, run->points.back().avg_acc, {}};
}

std::size_t Differing(const std::vector<float>& a, const std::vector<float>& b) {
  REQUIRE(a.size() == b.size());
  std::size_t n = 0;
  for (std::size_t j = 0; j < a.size(); ++j) n += a[j] != b[j];
  return n;
}

TEST_CASE("Attackers on six daemons give the simulator's models bit for bit, and the median beats the mean") {
  // Sign flip (s = 3: the two attackers outweigh the three honest clients, so the mean
  // climbs the loss), ALIE (z = Phi^-1(4/5) for K = 5, f = 2) and IPM (epsilon 0.5), each under the
  // mean and the coordinate-wise median. The median of five does not depend on the
  // order in which results arrive; the mean sums exact products n_i Delta_ij in double.
  // min_gap: the simulator's median-minus-mean accuracy this configuration must show
  // (0: ALIE is built to pass the median, and on blobs it barely moves either rule).
  struct Case {
    std::string attack;
    double scale, min_gap;
  };
  for (const Case& c : {Case{"sign-flip", 3, 0.2}, Case{"alie", 1, 0}, Case{"ipm", 0.5, 0.05}}) {
    CAPTURE(c.attack);
    // The trimmed mean cutting one value at each end is order-independent too. (Krum is
    // not here: with K = 5 and f = 2 its score is the distance to the nearest other
    // update, so two mutual nearest neighbours tie exactly and the arrival order picks.)
    double daemon_acc[3] = {0, 0, 0}, sim_acc[3] = {0, 0, 0};
    const std::string rules[3] = {"mean", "median", "trimmed-mean:0.2"};
    for (int r = 0; r < 3; ++r) {
      CAPTURE(rules[r]);
      const proto::JobConfig job = AttackJob(c.attack, c.scale, rules[r]);
      const Outcome daemons = OnDaemons(job);
      const Outcome sim = InSim(AttackScenario(job));
      CHECK(Differing(daemons.model, sim.model) == 0);
      CHECK(daemons.accuracy == doctest::Approx(sim.accuracy).epsilon(1e-12));
      daemon_acc[r] = daemons.accuracy;
      sim_acc[r] = sim.accuracy;
      MESSAGE(c.attack << " " << rules[r] << ": daemons " << daemons.accuracy << ", sim " << sim.accuracy);
    }
    if (c.min_gap > 0) {
      // The simulator's gap is the truth; the daemons must show at least half of it.
      const double gap = sim_acc[1] - sim_acc[0];
      REQUIRE(gap > c.min_gap);
      CHECK(daemon_acc[1] - daemon_acc[0] > gap / 2);
    }
  }
}

TEST_CASE("Attacker daemons sending 1e30 x their differences are refused as the simulator refuses them") {
  // Sign flip with s = 1e30: each crafted result is some 1e30 times longer
  // than an honest difference, far past plausibility (10) x ||x||. The
  // aggregator refuses both attackers' results on arrival every round; the
  // simulator's server, which plays them, refuses the same ones, so the
  // models agree bit for bit and end at the attack-free accuracy.
  const proto::JobConfig job = AttackJob("sign-flip", 1e30, "mean");
  const Outcome daemons = OnDaemons(job);
  const std::uint64_t rounds = job.spec().rounds();
  const Outcome sim = InSim(AttackScenario(job), 2 * rounds);
  CHECK(Differing(daemons.model, sim.model) == 0);
  proto::Scenario clean = AttackScenario(job);
  clean.mutable_spec()->set_attack("none");
  const double attack_free = InSim(clean).accuracy;
  MESSAGE("attack-free " << attack_free << ", daemons " << daemons.accuracy << ", sim " << sim.accuracy);
  CHECK(daemons.accuracy >= attack_free - 0.02);
  // Refused, counted and booked on the aggregator: 2 attackers x every round.
  CHECK(testing::Sample(daemons.metrics, "murmur_updates_refused_total{reason=\"implausible\"}") ==
        static_cast<double>(2 * rounds));
  CHECK(testing::Sample(daemons.metrics, "murmur_peer_offences_total") >= static_cast<double>(2 * rounds));
}

TEST_CASE("A gaussian attacker daemon adds noise of the simulator's scale s ||Delta|| / sqrt(d)") {
  // The attacker draws its noise from its own stream, the simulator's server from
  // another: the models differ, the noise's law must not. One round, mean, one
  // attacker (attack_fraction 0.2 of 5) of weight w = n_a / N:
  //   x_gauss = x0 + H + w g,  x_honest = x0 + H + w Delta_a,  x_flip = x0 + H - w Delta_a
  // (H the honest clients' weighted share), so from the simulator's honest and
  // sign-flip (s = 1) runs, g / ||Delta_a|| = 2 (x_gauss - (x_honest + x_flip) / 2) /
  // ||x_honest - x_flip||, whose d coordinates are N(0, s^2 / d) under the attack.
  proto::JobConfig job = AttackJob("gaussian", 2, "mean");
  job.mutable_spec()->set_attack_fraction(0.2);
  job.mutable_spec()->set_rounds(1);
  job.mutable_spec()->set_eval_every(1);
  const Outcome daemons = OnDaemons(job);
  const Outcome sim_gauss = InSim(AttackScenario(job));
  proto::Scenario flip = AttackScenario(job);
  flip.mutable_spec()->set_attack("sign-flip");
  flip.mutable_spec()->set_attack_scale(1);
  const Outcome sim_flip = InSim(flip);
  proto::Scenario honest = flip;
  honest.mutable_spec()->set_attack("none");
  const Outcome sim_honest = InSim(honest);
  const std::size_t d = daemons.model.size();
  REQUIRE(sim_flip.model.size() == d);
  double norm2 = 0;
  for (std::size_t j = 0; j < d; ++j) {
    const double v = static_cast<double>(sim_honest.model[j]) - sim_flip.model[j];
    norm2 += v * v;
  }
  const double norm = std::sqrt(norm2);
  REQUIRE(norm > 0);
  double sum = 0, sum2 = 0;
  for (std::size_t j = 0; j < d; ++j) {
    const double mid = (static_cast<double>(sim_honest.model[j]) + sim_flip.model[j]) / 2;
    const double z = 2 * (daemons.model[j] - mid) / norm;
    sum += z;
    sum2 += z * z;
  }
  const double n = static_cast<double>(d), sigma = job.spec().attack_scale() / std::sqrt(n);
  const double mean = sum / n, sd = std::sqrt((sum2 - n * mean * mean) / (n - 1));
  MESSAGE("noise per coordinate: mean " << mean << ", sd " << sd << " against " << sigma);
  CHECK(std::abs(mean) < 5 * sigma / std::sqrt(n));
  CHECK(std::abs(sd - sigma) < 5 * sigma / std::sqrt(2 * (n - 1)));
  // Not the simulator's noise: the streams differ.
  CHECK(Differing(daemons.model, sim_gauss.model) > d / 2);
}

engine::JobPlan DaemonPlan(const proto::JobSpec& spec) {
  auto plan = engine::PlanJob(spec, engine::Host::kDaemon);
  REQUIRE_MESSAGE(plan.ok(), plan.status().ToString());
  return std::move(plan).value();
}

TEST_CASE("Attackers named by client index are the clients the job's fraction draws, and poison alike") {
  // The attackers attack_fraction draws, named instead by their client indices: the same run.
  proto::JobConfig drawn = AttackJob("sign-flip", 3, "median");
  const std::vector<bool> attacker = DaemonPlan(drawn.spec()).fed().attackers;
  REQUIRE(attacker.size() == 5);
  proto::JobConfig named = drawn;
  named.mutable_spec()->set_attack_fraction(0);
  for (NodeId c = 0; c < 5; ++c)
    if (attacker[c]) named.mutable_spec()->add_attackers(c);
  REQUIRE(named.spec().attackers_size() == 2);
  CHECK(DaemonPlan(named.spec()).fed().attackers == attacker);
  // Krum's default f is the simulator's max(1, llround(attack_fraction K)) (sim/run/federated_run.cc),
  // with the fraction attackers / clients when they are named; an explicit krum_f stays.
  const engine::FederatedHost daemon{true, true, true};
  for (const proto::JobConfig& j : {drawn, named}) {
    const federated::ServerOptions o = engine::MakeServerOptions(DaemonPlan(j.spec()), daemon);
    CHECK(o.clients_per_round == 5);
    CHECK(o.robust.krum_f == 2);
    CHECK(o.attacker.empty());  // sign-flip attackers rewrite their own updates
  }
  {
    proto::JobConfig alie = drawn;
    alie.mutable_spec()->set_attack("alie");
    alie.mutable_spec()->set_krum_f(3);
    alie.mutable_spec()->set_clients_per_round(4);
    const federated::ServerOptions o = engine::MakeServerOptions(DaemonPlan(alie.spec()), daemon);
    CHECK(o.robust.krum_f == 3);
    CHECK(o.attacker == attacker);  // the aggregator plays ALIE for the drawn attackers
  }
  const Outcome daemons = OnDaemons(named);
  const Outcome sim = InSim(AttackScenario(drawn));
  CHECK(Differing(daemons.model, sim.model) == 0);
  // And a third attacker changes the run: the test can tell attackers apart.
  for (NodeId c = 0; c < 5; ++c) {
    if (!attacker[c]) {
      named.mutable_spec()->add_attackers(c);
      break;
    }
  }
  CHECK(Differing(OnDaemons(named).model, sim.model) > 0);
}

TEST_CASE("Label-flip attackers on daemons train on flipped labels as in the simulator, bit for bit") {
  const proto::JobConfig job = AttackJob("label-flip", 1, "mean");
  const Outcome daemons = OnDaemons(job);
  const Outcome sim = InSim(AttackScenario(job));
  CHECK(Differing(daemons.model, sim.model) == 0);
  proto::Scenario honest = AttackScenario(job);
  honest.mutable_spec()->set_attack("none");
  CHECK(Differing(InSim(honest).model, sim.model) > 0);
}

TEST_CASE("Federated attack fields refuse bad values and what daemons cannot run, naming the field") {
  const proto::JobConfig ok = AttackJob("sign-flip", 3, "median");
  CHECK(ValidateJobConfig(ok, 1).ok());
  testing::CheckRefusals(
      ok,
      {
          {"'attack'", [](proto::JobConfig& j) { j.mutable_spec()->set_attack("backdoor"); }},
          {"'attack_fraction'", [](proto::JobConfig& j) { j.mutable_spec()->set_attack_fraction(1); }},
          {"'attack_fraction'", [](proto::JobConfig& j) { j.mutable_spec()->set_attack_fraction(-0.1); }},
          {"'attack_scale'", [](proto::JobConfig& j) { j.mutable_spec()->set_attack_scale(0); }},
          {"'attack_scale'", [](proto::JobConfig& j) { j.mutable_spec()->set_attack_scale(std::nan("")); }},
          {"'attackers'",
           [](proto::JobConfig& j) { j.mutable_spec()->add_attackers(1); }},  // and attack_fraction
          {"'attackers'",
           [](proto::JobConfig& j) {
             j.mutable_spec()->set_attack_fraction(0);
             j.mutable_spec()->add_attackers(5);  // clients are 0 .. 4
           }},
          {"'attackers'",
           [](proto::JobConfig& j) {
             j.mutable_spec()->set_attack_fraction(0);
             j.mutable_spec()->add_attackers(1);
             j.mutable_spec()->add_attackers(1);
           }},
          {"'attackers'",
           [](proto::JobConfig& j) {
             j.mutable_spec()->set_attack_fraction(0);
             for (NodeId c : {0, 1, 2, 3, 4}) j.mutable_spec()->add_attackers(c);
           }},
          {"'attack'", [](proto::JobConfig& j) { j.mutable_spec()->set_algorithm("fedbuff"); }},
          {"'attack'",
           [](proto::JobConfig& j) {
             j.mutable_spec()->set_robust("mean");
             j.mutable_spec()->set_dp_clip(1);
           }},
          {"'attack'", [](proto::JobConfig& j) { j.mutable_spec()->set_upload_compression("topk:0.1"); }},
          {"'secure_aggregation'",
           [](proto::JobConfig& j) {
             j.mutable_spec()->set_attack("label-flip");
             j.mutable_spec()->set_robust("mean");
             j.mutable_spec()->set_secure_aggregation(true);
           }},
          {"'attack'",
           [](proto::JobConfig& j) {
             j.mutable_spec()->set_algorithm("dpsgd");
             j.mutable_spec()->set_topology("ring");
           }},
      });
  // Through the control port, as `murmur job submit` sends it: the daemon refuses it by name.
  {
    FedFleet fleet(2);
    proto::ControlRequest r;
    *r.mutable_submit()->mutable_job() = BlobsJob("bad-attack", "fedavg", 0, 2);
    r.mutable_submit()->mutable_job()->mutable_spec()->set_attack("backdoor");
    auto reply = fleet.Call(1, r);
    REQUIRE_MESSAGE(reply.ok(), reply.status().ToString());
    CHECK_FALSE(reply->ok());
    CHECK(reply->error().find("spec field 'attack'") != std::string::npos);
    CHECK(fleet.Status(1).state() == "idle");
  }
  // Label flip is data poisoning: FedBuff runs it, as the simulator does.
  proto::JobConfig flip = ok;
  flip.mutable_spec()->set_attack("label-flip");
  flip.mutable_spec()->set_algorithm("fedbuff");
  CHECK(ValidateJobConfig(flip, 1).ok());
}

}  // namespace
}  // namespace murmur::node
