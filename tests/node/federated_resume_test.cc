// A federated aggregator that stops and resumes from its checkpoint is the
// same job as one never stopped (federated/server.h "Resuming",
// node/job/federated_job.h "Checkpoints").
//
// The engine (FedServer on a ManualEnv, clients answering with a fixed
// function of the task): a server stopped after round k, rebuilt from
// ExportState and the model, makes every later update bit for bit as the
// unstopped server, for each server optimizer, SCAFFOLD, Oort selection,
// centered clipping and DP-FedAvg with adaptive clipping and a budget (same
// epsilon and clip at every round, the same stop round). A resume from the
// model alone (what murmurd did before) is run alongside and must differ,
// so that the comparison can fail.
//
// Four daemons: an aggregator stopped mid-job and given the job again, while
// its clients keep running, ends with the simulator's model bit for bit
// (FedAvgM, FedAdam, SCAFFOLD); a DP job's reported epsilon follows the
// accountant of the unstopped job after the resume and its budget stops it
// at the same round; adaptive clipping's norm continues from the checkpoint.
#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <optional>

#include "core/manual_env.h"
#include "federated/server.h"
#include "node/job/checkpoint.h"
#include "sim/run/federated_run.h"
#include "tests/node/fed_fleet.h"

namespace murmur::node {
namespace {

using federated::FedServer;
using federated::ServerOptions;
using testing::BlobsJob;
using testing::FedFleet;
using testing::ScenarioOf;

constexpr std::size_t kDim = 6;

federated::UpdatePtr Dense(const std::vector<float>& v) { return compression::DenseF32Update(v); }

// What client i returns for a task: delta_j = 0.3 (t_ij - x_j) + 0.01 sin(round + i + j)
// - 0.2 c_j, t_ij = (i + 1) (j - 2.5), c the server's SCAFFOLD control variate
// (0 without); its SCAFFOLD difference is half its delta.
MessagePtr Answer(NodeId client, const federated::FedMessage& task) {
  std::vector<float> x(kDim, 0.0f), c(kDim, 0.0f), delta(kDim);
  REQUIRE(task.updates()[0]->AddTo(x).ok());
  if (task.updates().size() == 2) REQUIRE(task.updates()[1]->AddTo(c).ok());
  const std::uint64_t round = task.header().round;
  for (std::size_t j = 0; j < kDim; ++j) {
    const double t = (client + 1.0) * (static_cast<double>(j) - 2.5);
    delta[j] = static_cast<float>(0.3 * (t - x[j]) +
                                  0.01 * std::sin(static_cast<double>(round + client + j)) - 0.2 * c[j]);
  }
  federated::FedHeader h;
  h.kind = federated::FedKind::kResult;
  h.round = round;
  h.weight = 10.0 + client;
  h.steps = 5;
  h.loss = 1.0 + 0.1 * static_cast<double>((client * 7 + round) % 5);
  std::vector<federated::UpdatePtr> updates;
  updates.push_back(Dense(delta));
  if (task.updates().size() == 2) {
    for (float& d : delta) d *= 0.5f;
    updates.push_back(Dense(delta));
  }
  return std::make_shared<const federated::FedMessage>(h, std::move(updates));
}

struct Trace final : RoundObserver {
  FedServer* server = nullptr;
  std::uint64_t stop_after = 0;  // export the state after this many rounds (0: never)
  std::vector<std::vector<float>> params;
  std::vector<double> epsilon, clip;
  std::optional<federated::ServerState> state;
  std::vector<float> state_params;
  void OnRoundDone(NodeId, std::uint64_t round, double) override {
    const auto p = server->params().span();
    params.emplace_back(p.begin(), p.end());
    epsilon.push_back(server->epsilon());
    clip.push_back(server->clip());
    if (round + 1 == stop_after) {
      state = server->ExportState();
      state_params.assign(p.begin(), p.end());
    }
  }
};

// Runs `o` from x0 (and `state`, when given) until it finishes or, with
// stop_after, until that round is done; the trace holds every round after the start.
Trace Run(const ServerOptions& o, const std::vector<float>& x0, const federated::ServerState* state,
          std::uint64_t stop_after = 0) {
  ManualEnv env(o.num_clients, 11);
  ParamVector x(kDim);
  std::copy(x0.begin(), x0.end(), x.data());
  Trace trace;
  trace.stop_after = stop_after;
  FedServer server(env, std::move(x), o, &trace);
  trace.server = &server;
  if (state != nullptr) REQUIRE(server.ImportState(*state).ok());
  server.Start();
  for (int guard = 0; guard < 100000 && !server.finished() && !trace.state; ++guard) {
    if (env.outbox().empty()) break;
    auto sent = env.outbox().front();
    env.outbox().erase(env.outbox().begin());
    const auto& task = static_cast<const federated::FedMessage&>(*sent.msg);
    server.OnMessage(sent.to, Answer(sent.to, task));
  }
  return trace;
}

std::size_t Differing(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return a.size() + b.size();
  std::size_t d = 0;
  for (std::size_t j = 0; j < a.size(); ++j) d += a[j] != b[j];
  return d;
}

TEST_CASE("A resumed FedServer makes every update of the never-stopped one, bit for bit") {
  struct Case {
    const char* name;
    std::function<void(ServerOptions&)> set;
  };
  using K = federated::ServerOptimizerKind;
  const Case cases[] = {
      {"fedavgm", [](ServerOptions& o) { o.optimizer = {K::kFedAvgM, 1.0, 0.9, 0.9, 0.99, 1e-3}; }},
      {"fedadam oort",
       [](ServerOptions& o) {
         o.optimizer = {K::kFedAdam, 0.05, 0.9, 0.9, 0.99, 1e-3};
         o.clients_per_round = 3;
         o.selection.kind = federated::SelectionKind::kOort;
       }},
      {"fedyogi", [](ServerOptions& o) { o.optimizer = {K::kFedYogi, 0.05, 0.9, 0.9, 0.99, 1e-3}; }},
      {"fedadagrad", [](ServerOptions& o) { o.optimizer = {K::kFedAdagrad, 0.05, 0.9, 0.9, 0.99, 1e-3}; }},
      {"scaffold", [](ServerOptions& o) { o.scaffold = true; }},
      {"centered clipping",
       [](ServerOptions& o) { o.robust.rule = federated::AggregationRule::kCenteredClipping; }},
      {"dp adaptive budget",
       [](ServerOptions& o) {
         o.dp_clip = 2.0;
         o.dp_noise = 2.0;
         o.dp_adaptive = true;
         o.adaptive.count_stddev = 0.1;
         o.epsilon_budget = 6.0;  // q = 0.4, z = 2: reached before round 40
       }},
  };
  const std::vector<float> x0(kDim, 0.0f);
  for (const Case& c : cases) {
    const std::string name = c.name;
    CAPTURE(name);
    ServerOptions o;
    o.num_clients = 5;
    o.clients_per_round = 2;
    o.rounds = 40;
    c.set(o);
    const std::uint64_t k = 7;
    const Trace whole = Run(o, x0, nullptr);
    const Trace first = Run(o, x0, nullptr, k);
    REQUIRE(first.state.has_value());
    const Trace resumed = Run(o, first.state_params, &*first.state);
    MESSAGE(name << ": " << whole.params.size() << " rounds");
    REQUIRE(whole.params.size() > k + 5);
    if (o.epsilon_budget > 0) REQUIRE(whole.params.size() < o.rounds);  // the budget stops it
    REQUIRE(resumed.params.size() == whole.params.size() - k);          // the same stop round (budget or all)
    for (std::size_t r = 0; r < resumed.params.size(); ++r) {
      CAPTURE(r + k + 1);
      CHECK(Differing(resumed.params[r], whole.params[r + k]) == 0);
      CHECK(std::bit_cast<std::uint64_t>(resumed.epsilon[r]) ==
            std::bit_cast<std::uint64_t>(whole.epsilon[r + k]));
      CHECK(std::bit_cast<std::uint64_t>(resumed.clip[r]) == std::bit_cast<std::uint64_t>(whole.clip[r + k]));
    }
    // The model alone, with a fresh server for the remaining rounds (murmurd before
    // server state): not the same job, so the checks above can fail.
    ServerOptions rest = o;
    rest.rounds = o.rounds - k;
    const Trace naive = Run(rest, first.state_params, nullptr);
    const bool same = naive.params.size() == resumed.params.size() &&
                      Differing(naive.params.back(), resumed.params.back()) == 0;
    CHECK_FALSE(same);
  }
}

TEST_CASE("ImportState refuses a state that is missing an entry or of the wrong size, naming it") {
  ServerOptions o;
  o.num_clients = 5;
  o.clients_per_round = 2;
  o.optimizer.kind = federated::ServerOptimizerKind::kFedAdam;
  const Trace first = Run(o, std::vector<float>(kDim, 0.0f), nullptr, 2);
  REQUIRE(first.state.has_value());
  ManualEnv env(5);
  FedServer ok(env, ParamVector(kDim), o, nullptr);
  CHECK(ok.ImportState(*first.state).ok());
  CHECK(ok.rounds_done() == 2);
  struct Spoil {
    const char* name;
    std::function<void(federated::ServerState&)> spoil;
  };
  const Spoil spoils[] = {
      {"'optimizer/v'", [](federated::ServerState& s) { s.vectors.erase("optimizer/v"); }},
      {"'optimizer/m'", [](federated::ServerState& s) { s.vectors["optimizer/m"].push_back(0); }},
      {"'accountant/rdp'", [](federated::ServerState& s) { s.vectors["accountant/rdp"].pop_back(); }},
      {"'selection/utility'", [](federated::ServerState& s) { s.vectors["selection/utility"].resize(4); }},
      {"'round'", [](federated::ServerState& s) { s.scalars["round"] = -1; }},
      {"'selection/rng_used'", [](federated::ServerState& s) { s.scalars["selection/rng_used"] = 5; }},
      {"'contributed'", [](federated::ServerState& s) { s.vectors["contributed"][0] = 0.5; }},
  };
  for (const Spoil& sp : spoils) {
    CAPTURE(sp.name);
    federated::ServerState s = *first.state;
    sp.spoil(s);
    FedServer server(env, ParamVector(kDim), o, nullptr);
    Status st = server.ImportState(s);
    CHECK(st.code() == StatusCode::kInvalidArgument);
    CHECK(st.message().find(sp.name) != std::string::npos);
  }
}

// --- Four daemons -----------------------------------------------------------

constexpr NodeId kNodes = 4;

// Four daemons whose aggregator's messages take 20 ms more (fault injection), so
// that a round lasts long enough for the test to stop the job in its midst.
std::unique_ptr<FedFleet> SlowFleet(NodeId aggregator) {
  return std::make_unique<FedFleet>(kNodes, [aggregator](NodeId i, proto::NodeConfig& c) {
    if (i != aggregator) return;
    c.set_fault_injection(true);
    c.mutable_faults()->set_delay(0.02);
  });
}

// Stops the job on the aggregator alone once it has made `after` rounds (it
// drains: ends after its current round, checkpointed) and gives it the job
// again; the clients run on. Returns the round it stopped after.
std::uint64_t RestartAggregator(FedFleet& fleet, const proto::JobConfig& job, std::uint64_t after) {
  const NodeId a = job.aggregator();
  REQUIRE(fleet.Poll([&] { return fleet.Status(a).rounds_done() >= after; }, std::chrono::seconds(60)));
  proto::ControlRequest stop;
  stop.mutable_stop();
  REQUIRE(fleet.Call(a, stop).ok());
  REQUIRE(fleet.Poll([&] { return fleet.Status(a).state() == "stopped"; }, std::chrono::seconds(30)));
  const std::uint64_t stopped_at = fleet.Status(a).rounds_done();
  proto::ControlRequest submit;
  *submit.mutable_submit()->mutable_job() = job;
  auto r = fleet.Call(a, submit);
  REQUIRE(r.ok());
  REQUIRE_MESSAGE(r->ok(), r->error());
  CHECK(fleet.Status(a).rounds_done() == stopped_at);  // from the checkpoint, not from 0
  return stopped_at;
}

TEST_CASE("An aggregator restarted mid-job ends with the never-stopped job's model, bit for bit") {
  // The simulator's run is the never-stopped job (federated_job_test.cc: a
  // daemon job equals it bit for bit). FedAvgM with all 3 clients; FedAdam
  // with 2 of 3 (the selection stream must resume too), Dirichlet(0.5);
  // SCAFFOLD (its server control variate), Dirichlet(0.3).
  proto::JobConfig fedavgm = BlobsJob("fedavgm", "fedavgm", 1);
  proto::JobConfig fedadam = BlobsJob("fedadam", "fedadam", 3);
  fedadam.mutable_spec()->set_clients_per_round(2);
  fedadam.mutable_spec()->set_partition("dirichlet:0.5");
  proto::JobConfig scaffold = BlobsJob("scaffold", "scaffold", 0);
  scaffold.mutable_spec()->set_partition("dirichlet:0.3");
  for (proto::JobConfig job : {fedavgm, fedadam, scaffold}) {
    CAPTURE(job.job_id());
    job.mutable_spec()->set_rounds(30);
    job.set_checkpoint_every(1);
    job.mutable_spec()->set_eval_every(0);
    auto slow = SlowFleet(job.aggregator());
    FedFleet& fleet = *slow;
    fleet.SubmitAll(job);
    const std::uint64_t stopped_at = RestartAggregator(fleet, job, 3);
    MESSAGE(job.job_id() << ": aggregator stopped after round " << stopped_at);
    REQUIRE(stopped_at < job.spec().rounds());
    REQUIRE(fleet.WaitDone(std::chrono::seconds(120)));
    for (NodeId i = 0; i < kNodes; ++i) CHECK(fleet.Status(i).rounds_done() == job.spec().rounds());
    fleet.Stop();
    const std::vector<float> model = fleet.daemons[job.aggregator()]->params();
    sim::FederatedStats stats;
    auto run = sim::RunFederatedScenario(ScenarioOf(job), {}, &stats);
    REQUIRE_MESSAGE(run.ok(), run.status().ToString());
    CHECK(Differing(model, stats.final_model) == 0);
  }
}

// epsilon after r rounds as the never-stopped server computes it: one Compose per round.
std::vector<double> EpsilonPerRound(double q, double z, double delta, std::size_t rounds) {
  federated::RdpAccountant acc;
  std::vector<double> eps{0.0};
  for (std::size_t r = 0; r < rounds; ++r) {
    acc.Compose(q, z);
    eps.push_back(acc.Epsilon(delta));
  }
  return eps;
}

TEST_CASE("A restarted DP aggregator goes on with the spent privacy and stops at the same round") {
  // DP-FedAvg, all 3 clients (q = 1), z = 5: the budget of 4 at delta 1e-5
  // allows some 20 rounds (computed below). The unstopped job charges one round at a time
  // and stops before the round that would pass the budget.
  proto::JobConfig job = BlobsJob("dp", "fedavg", 2);
  job.mutable_spec()->set_rounds(200);
  job.mutable_spec()->set_local_steps(5);
  job.set_checkpoint_every(1);
  job.mutable_spec()->set_eval_every(0);
  job.mutable_spec()->set_dp_clip(1.0);
  job.mutable_spec()->set_dp_noise(5.0);
  job.mutable_spec()->set_epsilon_budget(4.0);
  const std::vector<double> eps = EpsilonPerRound(1.0, 5.0, job.spec().dp_delta(), 200);
  std::uint64_t budget_rounds = 0;
  while (eps[budget_rounds + 1] <= job.spec().epsilon_budget()) ++budget_rounds;
  MESSAGE("the budget allows " << budget_rounds << " rounds");
  REQUIRE(budget_rounds > 8);
  REQUIRE(budget_rounds < 100);
  auto slow = SlowFleet(job.aggregator());
  FedFleet& fleet = *slow;
  fleet.SubmitAll(job);
  const std::uint64_t stopped_at = RestartAggregator(fleet, job, 3);
  REQUIRE(stopped_at + 3 < budget_rounds);
  CHECK(fleet.Status(job.aggregator()).epsilon() == eps[stopped_at]);
  // Every status seen after the resume: the epsilon of its round or of a later
  // one (it is set before rounds_done), never that of a fresh accountant.
  std::size_t seen = 0, exact = 0;
  fleet.Poll(
      [&] {
        const proto::JobStatus s = fleet.Status(job.aggregator());
        const std::uint64_t r = s.rounds_done();
        ++seen;
        bool ok = false;
        for (std::uint64_t j = r; j <= std::min<std::uint64_t>(r + 3, 200); ++j) ok |= s.epsilon() == eps[j];
        exact += s.epsilon() == eps[r];
        CHECK_MESSAGE(ok, "round " << r << " epsilon " << s.epsilon());
        return s.state() == "done";
      },
      std::chrono::seconds(120));
  const proto::JobStatus end = fleet.Status(job.aggregator());
  CHECK(end.state() == "done");
  CHECK(end.rounds_done() == budget_rounds);
  CHECK(end.epsilon() == eps[budget_rounds]);
  CHECK(end.error().find("privacy budget") != std::string::npos);
  MESSAGE(seen << " statuses after the resume, " << exact << " with the epsilon of exactly their round");
}

TEST_CASE("Adaptive clipping's norm continues from the checkpoint after a restart") {
  // Server-side DP with adaptive clipping from C = 1000, far above every
  // update's norm: each round every client is unclipped, b = 1 + 0.05 N(0, 1)
  // (count noise sigma_b = K / 20 over K = 3), and log C falls by
  // 0.2 (b - 0.5) = 0.1 + 0.01 N(0, 1) a round (Andrew et al. 2021, Alg. 1).
  // After R rounds log(C_R / 1000) = -0.1 R within 0.01 sqrt(R) per standard
  // deviation if C continued through the restart, -0.1 (R - k) if it was reset.
  proto::JobConfig job = BlobsJob("clip", "fedavg", 1);
  job.mutable_spec()->set_rounds(30);
  job.mutable_spec()->set_local_steps(5);
  job.set_checkpoint_every(1);
  job.mutable_spec()->set_eval_every(0);
  job.mutable_spec()->set_dp_clip(1000);
  job.mutable_spec()->set_dp_noise(0.001);
  job.mutable_spec()->set_dp_adaptive(true);
  auto slow = SlowFleet(job.aggregator());
  FedFleet& fleet = *slow;
  fleet.SubmitAll(job);
  const std::uint64_t k = RestartAggregator(fleet, job, 5);
  REQUIRE(k >= 5);
  REQUIRE(fleet.WaitDone(std::chrono::seconds(120)));
  const std::string path = testing::JobCheckpoint(
      (fleet.root / std::string("n").append(std::to_string(job.aggregator()))).string(), job.job_id());
  auto ckpt = LoadCheckpoint(path, fleet.daemons[job.aggregator()]->params().size());
  REQUIRE_MESSAGE(ckpt.ok(), ckpt.status().ToString());
  REQUIRE(ckpt->round == job.spec().rounds());
  const double log_ratio = std::log(ckpt->scalars.at("server/clip") / 1000);
  const double r = static_cast<double>(job.spec().rounds());
  MESSAGE("log(C_R / C_0) = " << log_ratio << " (continued: " << -0.1 * r << ", reset after round " << k
                              << ": " << -0.1 * (r - k) << ")");
  CHECK(std::abs(log_ratio + 0.1 * r) < 6 * 0.01 * std::sqrt(r));
  CHECK(ckpt->scalars.count("server/noise/rng_block") == 0);  // the secret noise stream stays off the disk
}

}  // namespace
}  // namespace murmur::node
