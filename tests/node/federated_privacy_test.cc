// SecAgg+, robust rules and DP-FedAvg in federated jobs on murmurd
// (node/job/federated_job.h): in-process daemons on loopback, with real SecAgg+
// secrets and keys signed by the daemons' identities. Truths from outside the
// daemon: the plain FedAvg daemon run and the quantization bound computed
// here from the partition sizes; the simulator's run of the same
// configuration (which the daemon must match where no real randomness is
// involved); the DP noise's closed-form scale z C / K.
#include <doctest/doctest.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <sstream>

#include "node/job/federated_job.h"
#include "sim/run/federated_run.h"
#include "sim/run/world.h"
#include "tests/node/fed_fleet.h"

namespace murmur::node {
namespace {

using testing::BlobsJob;
using testing::FedFleet;
using testing::ScenarioOf;

// One job on a fresh fleet of its daemons (the aggregator and the clients), to the end.
struct JobRun {
  std::vector<float> model;  // the aggregator's global model
  proto::JobStatus server;
  double seconds = 0;                              // submit to every daemon done
  double round_seconds = 0, round_cpu = 0;         // per round after the first (wall; CPU of the process)
  std::vector<double> bytes_sent, bytes_received;  // per daemon, the whole run (membership included)
  double rate_limited = 0;  // messages the daemons skipped over the per-address message rate
};

double Metric(const std::string& text, const std::string& name) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(name + " ", 0) == 0) return std::stod(line.substr(name.size() + 1));
  return -1;
}

double ProcessCpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         1e-6 * static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

JobRun RunOnDaemons(const proto::JobConfig& job) {
  FedFleet fleet(DaemonsOf(job));
  const auto start = std::chrono::steady_clock::now();
  fleet.SubmitAll(job);
  // From the aggregator's first update to the end: no start-up or joins in it.
  REQUIRE(fleet.Poll([&] { return fleet.Status(job.aggregator()).rounds_done() >= 1; },
                     std::chrono::seconds(60)));
  const auto first = std::chrono::steady_clock::now();
  const double cpu_first = ProcessCpuSeconds();
  const std::uint64_t rounds_first = fleet.Status(job.aggregator()).rounds_done();
  REQUIRE(fleet.WaitDone(std::chrono::seconds(300)));
  JobRun run;
  const auto end = std::chrono::steady_clock::now();
  run.seconds = std::chrono::duration<double>(end - start).count();
  if (job.spec().rounds() > rounds_first) {
    const double rounds = static_cast<double>(job.spec().rounds() - rounds_first);
    run.round_seconds = std::chrono::duration<double>(end - first).count() / rounds;
    run.round_cpu = (ProcessCpuSeconds() - cpu_first) / rounds;
  }
  run.server = fleet.Status(job.aggregator());
  for (NodeId i = 0; i < DaemonsOf(job); ++i) {
    proto::ControlRequest r;
    r.mutable_metrics();
    auto m = fleet.Call(i, r);
    REQUIRE(m.ok());
    run.bytes_sent.push_back(Metric(m->metrics(), "murmur_bytes_sent_total"));
    run.bytes_received.push_back(Metric(m->metrics(), "murmur_bytes_received_total"));
    run.rate_limited += Metric(m->metrics(), "murmur_peer_messages_rate_limited_total");
  }
  fleet.Stop();
  run.model = fleet.daemons[job.aggregator()]->params();
  return run;
}

sim::FederatedStats RunInSim(const proto::Scenario& s) {
  sim::FederatedStats stats;
  auto run = sim::RunFederatedScenario(s, {}, &stats);
  REQUIRE_MESSAGE(run.ok(), run.status().ToString());
  return stats;
}

proto::JobConfig SecAggJob(const std::string& id, NodeId nodes) {
  proto::JobConfig job = BlobsJob(id, "fedavg", 1, nodes);
  job.mutable_spec()->set_rounds(1);
  job.mutable_spec()->set_eval_every(1);
  job.mutable_spec()->set_secure_aggregation(true);
  job.mutable_spec()->set_secagg_bits(16);
  job.mutable_spec()->set_secagg_range(2);
  job.mutable_spec()->set_secagg_timeout(10);
  return job;
}

// |Delta_secagg - Delta_plain| per coordinate, for one FedAvg round of `clients`
// clients: A = sum_i w_i Delta_i and W = sum_i w_i (w_i = n_i / n_max) are each
// off by at most e = m R / (2^bits - 1) (m survivors), so Delta is off by at most
// (e + |Delta| e) / (W - e), plus float32 rounding of the stored model
// (docs/security.md, "Quantization"; as tests/federated/secagg_run_test.cc).
struct Bound {
  std::vector<double> x0;
  double total = 0, e = 0;
  double At(std::size_t j, double plain) const {
    const double delta = std::abs(plain - x0[j]);
    return (e + delta * e) / (total - e) + 2e-7 * (1 + std::abs(plain));
  }
};

Bound QuantizationBound(const proto::JobConfig& job, const std::vector<NodeId>& survivors) {
  auto world = sim::BuildWorld(sim::PlanScenario(ScenarioOf(job)).value()).value();
  Bound b;
  b.x0.assign(world->initial.span().begin(), world->initial.span().end());
  double n_max = 0;
  for (NodeId i = 0; i < job.spec().nodes(); ++i)
    n_max = std::max(n_max, static_cast<double>(world->partition->node(i).size()));
  for (NodeId i : survivors) b.total += static_cast<double>(world->partition->node(i).size()) / n_max;
  b.e = static_cast<double>(survivors.size()) * job.spec().secagg_range() /
        (std::ldexp(1.0, job.spec().secagg_bits()) - 1);
  return b;
}

TEST_CASE("SecAgg+ between five daemons equals plain FedAvg within the quantization bound") {
  // Four clients (k = 0: every other client, t = 2), aggregator 1.
  proto::JobConfig secure = SecAggJob("secagg", 5);
  proto::JobConfig plain = secure;
  plain.set_job_id("plain");
  plain.mutable_spec()->set_secure_aggregation(false);
  const JobRun p = RunOnDaemons(plain);
  const JobRun s = RunOnDaemons(secure);
  CHECK(s.server.rounds_done() == 1);
  CHECK(s.server.error().empty());
  const Bound bound = QuantizationBound(secure, {0, 1, 2, 3});
  REQUIRE(s.model.size() == p.model.size());
  double worst_excess = -1, worst = 0;
  for (std::size_t j = 0; j < p.model.size(); ++j) {
    const double diff = std::abs(static_cast<double>(s.model[j]) - p.model[j]);
    worst = std::max(worst, diff);
    worst_excess = std::max(worst_excess, diff - bound.At(j, p.model[j]));
  }
  CHECK(worst_excess <= 0);
  CHECK(worst > 0);  // quantized: not the plain sum bit for bit
  CHECK(s.server.test_accuracy() == doctest::Approx(p.server.test_accuracy()).epsilon(0.02));
}

TEST_CASE("SecAgg+ on daemons recovers a client that stops after key sharing, and aborts below threshold") {
  // secagg_dropout silences clients after ShareKeys by the job seed's stream, as in the
  // simulator: pick seeds where round 0 loses exactly one of the four clients (recovered:
  // 3 survivors >= 3 participants, each lost mask key rebuilt from t = 2 of 3 shares), and
  // where it loses two or more (fewer than 3 survivors: the round aborts, the model stays x0).
  proto::JobConfig job = SecAggJob("dropout", 5);
  job.mutable_spec()->set_secagg_dropout(0.3);
  job.mutable_spec()->set_deadline(3);  // the masked-input stage waits this long for the silent clients
  std::uint64_t one = 0, two = 0;
  sim::FederatedStats one_stats;
  for (std::uint64_t seed = 1; seed <= 60 && (one == 0 || two == 0); ++seed) {
    job.mutable_spec()->set_seed(seed);
    proto::Scenario sc = ScenarioOf(job);
    sc.mutable_spec()->set_secure_aggregation(true);
    sc.mutable_spec()->set_secagg_bits(job.spec().secagg_bits());
    sc.mutable_spec()->set_secagg_range(job.spec().secagg_range());
    sc.mutable_spec()->set_secagg_dropout(job.spec().secagg_dropout());
    sc.mutable_spec()->set_deadline(job.spec().deadline());
    const sim::FederatedStats st = RunInSim(sc);
    if (one == 0 && st.secagg_clients_dropped == 1 && st.secagg_rounds_aborted == 0) {
      one = seed;
      one_stats = st;
    }
    if (two == 0 && st.secagg_rounds_aborted == 1) two = seed;  // two or more lost
  }
  REQUIRE(one > 0);
  REQUIRE(two > 0);

  {  // One client lost after key sharing: recovered.
    job.mutable_spec()->set_seed(one);
    const JobRun run = RunOnDaemons(job);
    CHECK(run.server.rounds_done() == 1);
    CHECK(run.server.error().empty());
    // The simulator's run with the same silent client (the masks cancel whatever the
    // secrets, so the unmasked sum is the same quantized sum): equal within the bound
    // of three survivors (in fact to the bit).
    REQUIRE(run.model.size() == one_stats.final_model.size());
    const Bound bound = QuantizationBound(job, {0, 1, 2});
    std::size_t outside = 0, changed = 0;
    for (std::size_t j = 0; j < run.model.size(); ++j) {
      outside += std::abs(static_cast<double>(run.model[j]) - one_stats.final_model[j]) > bound.e;
      changed += run.model[j] != static_cast<float>(bound.x0[j]);
    }
    CHECK(outside == 0);
    CHECK(changed > run.model.size() / 2);  // the round did move the model
  }
  {  // Two or more clients lost: the round aborts, the model is unchanged, the job says why.
    job.mutable_spec()->set_seed(two);
    const JobRun run = RunOnDaemons(job);
    CHECK(run.server.rounds_done() == 1);
    CHECK(run.server.state() == "done");
    CHECK(run.server.error().find("SecAgg+ aborted") != std::string::npos);
    const Bound bound = QuantizationBound(job, {0, 1});
    std::size_t changed = 0;
    for (std::size_t j = 0; j < run.model.size(); ++j)
      changed += run.model[j] != static_cast<float>(bound.x0[j]);
    CHECK(changed == 0);
  }
}

TEST_CASE("Robust rules on five daemons train the simulator's model, bit for bit") {
  // Four clients. The coordinate-wise median and the trimmed mean cutting one value at
  // each end (the mean of the middle two) do not depend on the order in which results
  // arrive (which loopback does not fix), so the daemon run equals the simulator's.
  for (const char* rule : {"median", "trimmed-mean:0.25"}) {
    CAPTURE(rule);
    proto::JobConfig job = BlobsJob("robust", "fedavg", 2, 5);
    job.mutable_spec()->set_rounds(4);
    job.mutable_spec()->set_robust(rule);
    const JobRun run = RunOnDaemons(job);
    proto::Scenario sc = ScenarioOf(job);
    sc.mutable_spec()->set_robust(rule);
    const sim::FederatedStats st = RunInSim(sc);
    REQUIRE(run.model.size() == st.final_model.size());
    std::size_t differing = 0;
    for (std::size_t j = 0; j < run.model.size(); ++j) differing += run.model[j] != st.final_model[j];
    CHECK(differing == 0);
  }
}

TEST_CASE("DP-FedAvg on daemons: clipping as in the simulator, noise from real randomness at scale z C / K") {
  // One round, three clients, server-side DP with C = 0.05 (below the plain update's norm,
  // so clipping bites). Without noise the daemon equals the simulator (sums of three
  // clipped updates in arrival order: float rounding only) and |x1 - x0| <= C. With
  // z = 2 the difference to the noiseless run is N(0, (z C)^2) / K per coordinate, drawn
  // from randombytes: its sample deviation lies within 5 standard errors of z C / K,
  // and it is not the simulator's seeded noise.
  proto::JobConfig job = BlobsJob("dp", "fedavg", 0);
  job.mutable_spec()->set_rounds(1);
  job.mutable_spec()->set_dp_clip(0.05);
  proto::Scenario sc = ScenarioOf(job);
  sc.mutable_spec()->set_dp_clip(job.spec().dp_clip());
  const sim::FederatedStats noiseless = RunInSim(sc);
  const Bound b = QuantizationBound(job, {});
  const JobRun clipped = RunOnDaemons(job);
  const std::size_t d = clipped.model.size();
  REQUIRE(d == noiseless.final_model.size());
  double step = 0, plain_step = 0, worst = 0;
  proto::Scenario without_dp = ScenarioOf(job);
  without_dp.mutable_spec()->clear_dp_clip();
  const sim::FederatedStats plain = RunInSim(without_dp);
  for (std::size_t j = 0; j < d; ++j) {
    step += std::pow(clipped.model[j] - b.x0[j], 2);
    plain_step += std::pow(plain.final_model[j] - b.x0[j], 2);
    worst = std::max(worst, std::abs(static_cast<double>(clipped.model[j]) - noiseless.final_model[j]));
  }
  CHECK(std::sqrt(plain_step) > 2 * job.spec().dp_clip());  // the clip is active
  CHECK(std::sqrt(step) <= job.spec().dp_clip() * (1 + 1e-5));
  CHECK(worst <= 1e-6);

  job.mutable_spec()->set_dp_noise(2);
  sc.mutable_spec()->set_dp_noise(2);
  const sim::FederatedStats seeded = RunInSim(sc);
  const JobRun noisy = RunOnDaemons(job);
  double sum = 0, sq = 0;
  std::size_t same_as_seeded = 0;
  for (std::size_t j = 0; j < d; ++j) {
    const double n = static_cast<double>(noisy.model[j]) - noiseless.final_model[j];
    sum += n;
    sq += n * n;
    same_as_seeded += noisy.model[j] == seeded.final_model[j];
  }
  const double sigma = 2 * job.spec().dp_clip() / 3;
  const double mean = sum / static_cast<double>(d);
  const double sd = std::sqrt(sq / static_cast<double>(d) - mean * mean);
  CAPTURE(d);
  CAPTURE(sd);
  CHECK(std::abs(mean) <= 5 * sigma / std::sqrt(static_cast<double>(d)));
  CHECK(std::abs(sd / sigma - 1) <= 5 / std::sqrt(2.0 * static_cast<double>(d)));
  CHECK(same_as_seeded < d / 10);
}

TEST_CASE("A DP job whose privacy budget runs out ends on every daemon where the simulator stops") {
  // The RDP accountant depends only on q = K / N, z and the rounds, not on the noise drawn:
  // the aggregator must refuse the same round as the simulator, end the job, tell the
  // clients, and say why in the job status.
  proto::JobConfig job = BlobsJob("budget", "fedavg", 3);
  job.mutable_spec()->set_rounds(50);
  job.mutable_spec()->set_dp_clip(0.5);
  job.mutable_spec()->set_dp_noise(1.5);
  job.mutable_spec()->set_epsilon_budget(3);
  proto::Scenario sc = ScenarioOf(job);
  sc.mutable_spec()->set_dp_clip(job.spec().dp_clip());
  sc.mutable_spec()->set_dp_noise(job.spec().dp_noise());
  sc.mutable_spec()->set_epsilon_budget(job.spec().epsilon_budget());
  auto sim_run = sim::RunFederatedScenario(sc, {}, nullptr);
  REQUIRE(sim_run.ok());
  REQUIRE(sim_run->rounds_done > 0);
  REQUIRE(sim_run->rounds_done < job.spec().rounds());
  FedFleet fleet;
  fleet.SubmitAll(job);
  REQUIRE(fleet.WaitDone(std::chrono::seconds(120)));
  const proto::JobStatus server = fleet.Status(job.aggregator());
  CHECK(server.rounds_done() == sim_run->rounds_done);
  CHECK(server.error().find("privacy budget") != std::string::npos);
  for (NodeId i = 0; i < fleet.nodes; ++i) CHECK(fleet.Status(i).rounds_done() == sim_run->rounds_done);
}

TEST_CASE("Federated privacy and robustness fields refuse what the simulator refuses, naming the field") {
  proto::JobConfig ok = SecAggJob("j", 5);
  CHECK(ValidateJobConfig(ok, 2).ok());
  testing::CheckRefusals(
      ok,
      {
          {"'secure_aggregation'", [](proto::JobConfig& j) { j.mutable_spec()->set_dp_clip(1); }},
          {"'secure_aggregation'", [](proto::JobConfig& j) { j.mutable_spec()->set_robust("median"); }},
          {"'secure_aggregation'", [](proto::JobConfig& j) { j.mutable_spec()->set_algorithm("scaffold"); }},
          {"'secure_aggregation'",
           [](proto::JobConfig& j) { j.mutable_spec()->set_upload_compression("topk:0.1"); }},
          {"'clients_per_round'", [](proto::JobConfig& j) { j.mutable_spec()->set_clients_per_round(2); }},
          {"'secagg_neighbours'", [](proto::JobConfig& j) { j.mutable_spec()->set_secagg_neighbours(3); }},
          {"'secagg_threshold'", [](proto::JobConfig& j) { j.mutable_spec()->set_secagg_threshold(1.5); }},
          {"'secagg_dropout'", [](proto::JobConfig& j) { j.mutable_spec()->set_secagg_dropout(1); }},
          {"'secagg_bits'", [](proto::JobConfig& j) { j.mutable_spec()->set_secagg_bits(31); }},
          {"'secagg_timeout'", [](proto::JobConfig& j) { j.mutable_spec()->set_secagg_timeout(0); }},
          {"'robust'", [](proto::JobConfig& j) { j.mutable_spec()->set_robust("mode"); }},
          {"'dp_noise'",
           [](proto::JobConfig& j) {
             j.mutable_spec()->set_secure_aggregation(false);
             j.mutable_spec()->set_dp_noise(1);
           }},
          {"'dp_clip'",
           [](proto::JobConfig& j) {
             j.mutable_spec()->set_secure_aggregation(false);
             j.mutable_spec()->set_dp_clip(1);
             j.mutable_spec()->set_robust("median");
           }},
          {"'dp_clip'",
           [](proto::JobConfig& j) {
             j.mutable_spec()->set_secure_aggregation(false);
             j.mutable_spec()->set_dp_clip(1);
             j.mutable_spec()->set_algorithm("fedbuff");
           }},
          {"'dp_side'", [](proto::JobConfig& j) { j.mutable_spec()->set_dp_side("edge"); }},
          {"'dp_delta'", [](proto::JobConfig& j) { j.mutable_spec()->set_dp_delta(0); }},
      });
}

TEST_SUITE("slow") {
  // (No comma in the name: doctest_discover_tests looks the suite up with --test-case=NAME,
  // where a comma separates filters, and the `slow` label would be lost.)
  TEST_CASE("SecAgg+ cost per round on loopback daemons against plain FedAvg") {
    // Bytes per round = (run of 201 rounds - run of 1 round) / 200, which leaves out
    // start-up, joins and the end; time per round from the aggregator's first update to
    // the end of the 201-round run (wall, and CPU of the whole process: every daemon and
    // the status polls, 10 a second). All daemons share 127.0.0.1, so the aggregator's
    // per-address message limit (1000/s, node/transport/peer_scoring.h) counts every client's
    // messages together: a SecAgg+ message skipped there stalls its stage until
    // round_timeout (printed as rate-limited). Bytes are the daemons' transport counters (sealed frames on
    // the wire, membership traffic included). Printed for docs/security.md. The truths
    // checked: a SecAgg+ client sends at least its masked input, 4 (d + 2) bytes, per
    // round, and more than a plain client (which sends its 4 d model bytes and no keys).
    for (NodeId nodes : {5u, 9u}) {
      for (const char* model : {"softmax", "mlp:256"}) {
        // [plain, secagg][client sent, client received, aggregator in, s, CPU s, rate-limited]
        double per_round[2][6] = {};
        std::size_t d = 0;
        for (int secure = 0; secure < 2; ++secure) {
          JobRun runs[2];
          for (int r = 0; r < 2; ++r) {
            proto::JobConfig job = SecAggJob("cost", nodes);
            job.mutable_spec()->set_model(model);
            job.mutable_spec()->set_secure_aggregation(secure == 1);
            job.mutable_spec()->set_rounds(r == 0 ? 1 : 201);
            job.mutable_spec()->set_eval_every(0);
            runs[r] = RunOnDaemons(job);
            d = runs[r].model.size();
          }
          double sent = 0, received = 0;
          for (NodeId i = 0; i < nodes; ++i) {
            if (i == 1) continue;  // the aggregator
            sent += runs[1].bytes_sent[i] - runs[0].bytes_sent[i];
            received += runs[1].bytes_received[i] - runs[0].bytes_received[i];
          }
          per_round[secure][0] = sent / (nodes - 1) / 200;
          per_round[secure][1] = received / (nodes - 1) / 200;
          per_round[secure][2] = (runs[1].bytes_received[1] - runs[0].bytes_received[1]) / 200;
          per_round[secure][3] = runs[1].round_seconds;
          per_round[secure][4] = runs[1].round_cpu;
          per_round[secure][5] = runs[1].rate_limited;
        }
        MESSAGE("clients " << nodes - 1 << " " << std::string(model) << " d " << d
                           << " | plain: client sends " << per_round[0][0] << " B, receives "
                           << per_round[0][1] << " B, aggregator receives " << per_round[0][2] << " B, "
                           << per_round[0][3] * 1e3 << " ms/round, CPU " << per_round[0][4] * 1e3
                           << " ms/round, rate-limited " << per_round[0][5] << " | secagg: client sends "
                           << per_round[1][0] << " B, receives " << per_round[1][1]
                           << " B, aggregator receives " << per_round[1][2] << " B, " << per_round[1][3] * 1e3
                           << " ms/round, CPU " << per_round[1][4] * 1e3 << " ms/round, rate-limited "
                           << per_round[1][5]);
        CHECK(per_round[1][0] >= 4.0 * static_cast<double>(d + 2));
        CHECK(per_round[1][0] > per_round[0][0]);
      }
    }
  }
}  // TEST_SUITE("slow")

}  // namespace
}  // namespace murmur::node
