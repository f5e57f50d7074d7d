// murmur sim: run a scenario in the in-process simulator.
#include <cmath>
#include <cxxopts.hpp>

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "apps/murmur/command.h"
#include "apps/murmur/model_digests.h"
#include "apps/murmur/plot.h"
#include "apps/murmur/progress.h"
#include "apps/murmur/scenario_flags.h"
#include "config/files.h"
#include "config/scenario_fields.h"
#include "core/log.h"
#include "crypto/hmac.h"
#include "engine/algorithms.h"
#include "engine/gossip_builder.h"
#include "ml/text.h"
#include "sim/mpi/mpi.h"
#include "sim/run/scenario.h"
#include "sim/runner.h"

namespace murmur::cli {

namespace {

// " (did you mean --a or --b?)" for cxxopts' "Option 'x' does not exist",
// from the scenario fields nearest to x (as murmur.simulate suggests them);
// empty when none is near.
std::string FlagSuggestion(const std::string& error) {
  // cxxopts quotes the name with U+2018 and U+2019 (or, in other builds, ').
  std::size_t open = error.find("\xe2\x80\x98"), close = error.rfind("\xe2\x80\x99"), width = 3;
  if (open == std::string::npos || close == std::string::npos) {
    open = error.find('\'');
    close = error.rfind('\'');
    width = 1;
  }
  if (open == std::string::npos || close == std::string::npos || close <= open + width) return "";
  std::string name = error.substr(open + width, close - open - width);
  std::replace(name.begin(), name.end(), '-', '_');
  const std::vector<std::string> near = config::SimilarScenarioFields(name);
  if (near.empty()) return "";
  std::string out = " (did you mean ";
  for (std::size_t i = 0; i < near.size(); ++i) {
    std::string flag = near[i];
    std::replace(flag.begin(), flag.end(), '_', '-');
    out += (i == 0 ? "--" : i + 1 == near.size() ? " or --" : ", --") + flag;
  }
  return out + "?)";
}

std::string Megabytes(std::uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f", static_cast<double>(bytes) / 1e6);
  return buf;
}

// A language model (dataset text:T:FILE) is read by its loss in nats per
// byte and its perplexity exp(loss), not by an accuracy.
bool IsTextDataset(const proto::JobSpec& spec) { return ml::IsTextDatasetSpec(spec.dataset()); }

void PrintTable(const sim::RunSummary& r, bool text) {
  if (text) {
    std::printf("\n%7s %12s %10s %10s %10s %10s %11s %11s\n", "round", "virtual s", "wall s", "node loss",
                "avg loss", "avg ppl", "consensus", "MB sent");
    for (const auto& p : r.points) {
      std::printf("%7llu %12.1f %10.1f %10.4f %10.4f %10.3f %11.4g %11s\n",
                  static_cast<unsigned long long>(p.round), p.virtual_s, p.wall_s, p.loss_mean, p.avg_loss,
                  std::exp(p.avg_loss), p.consensus, Megabytes(p.bytes_sent).c_str());
    }
    return;
  }
  std::printf("\n%7s %12s %10s %26s %10s %11s %11s\n", "round", "virtual s", "wall s",
              "node acc mean/min/max", "avg-model", "consensus", "MB sent");
  for (const auto& p : r.points) {
    std::printf("%7llu %12.1f %10.1f %10.4f/%.4f/%.4f %10.4f %11.4g %11s\n",
                static_cast<unsigned long long>(p.round), p.virtual_s, p.wall_s, p.acc_mean, p.acc_min,
                p.acc_max, p.avg_acc, p.consensus, Megabytes(p.bytes_sent).c_str());
  }
}

// What a run does in a few words, for headers and plot legends: the
// algorithm and what it sends, and the rule and attackers where they matter.
std::string RunLabel(const engine::JobPlan& plan) {
  const proto::JobSpec& spec = plan.spec();
  std::string label = spec.algorithm();
  if (spec.collective() != "ring") label += " (" + spec.collective() + ")";
  if (spec.groups() > 1) label += " " + std::to_string(spec.groups()) + " groups";
  const bool attacked = spec.attack() != "none" && (spec.attack_fraction() > 0 || spec.attackers_size() > 0);
  if (!plan.federated()) {
    label += " " + plan.gossip().compression;
    if (spec.gossip_aggregation() != "mean") label += " " + spec.gossip_aggregation();
  } else {
    if (spec.upload_compression() != "none") label += " upload " + spec.upload_compression();
    if (spec.robust() != "mean") label += " " + spec.robust();
    if (spec.dp_clip() > 0) label += " dp";
    if (spec.secure_aggregation()) label += " secagg";
  }
  if (attacked) label += " vs " + spec.attack();
  return label;
}

// "76.2x fewer bytes than dense fp32 models" only when it is fewer.
std::string DenseRatio(double dense, double sent) {
  char buf[96];
  const double ratio = dense / sent;
  if (ratio >= 1.05) {
    std::snprintf(buf, sizeof(buf), "%.1fx fewer bytes than dense fp32 models", ratio);
  } else if (ratio > 0.95) {
    std::snprintf(buf, sizeof(buf), "as many bytes as dense fp32 models");
  } else {
    std::snprintf(buf, sizeof(buf), "%.2fx the bytes of dense fp32 models", 1 / ratio);
  }
  return buf;
}

void PrintSummary(const sim::RunSummary& r, const sim::ScenarioPlan& plan) {
  const proto::Scenario& s = plan.scenario();
  if (r.points.empty()) return;
  const sim::EvalPoint& last = r.points.back();
  const proto::JobSpec& spec = s.spec();
  if (IsTextDataset(spec)) {
    const bool federated = plan.job().federated();
    std::printf("\nfinal (round %llu): %s test loss %.4f nats per byte, perplexity %.3f",
                static_cast<unsigned long long>(last.round), federated ? "global model" : "averaged-model",
                last.avg_loss, std::exp(last.avg_loss));
    if (!federated)
      std::printf("; node loss mean %.4f, perplexity %.3f", last.loss_mean, std::exp(last.loss_mean));
    std::printf("\nstopped: %s\n", r.stop_reason.c_str());
  } else if (plan.job().federated()) {
    std::printf("\nfinal (round %llu): global model test accuracy %.4f, test loss %.4f\n",
                static_cast<unsigned long long>(last.round), last.avg_acc, last.avg_loss);
    if (spec.edge_aggregators() > 0)  // the top server hears from the edges, not the clients
      std::printf("stopped: %s; %zu of %u edge aggregators contributed", r.stop_reason.c_str(),
                  r.contributors, spec.edge_aggregators());
    else
      std::printf("stopped: %s; %zu of %zu clients contributed", r.stop_reason.c_str(), r.contributors,
                  r.clients);
    if (spec.dp_clip() > 0) std::printf("; epsilon %.4g at delta %.3g", r.epsilon, spec.dp_delta());
    std::printf("\n");
  } else {
    const std::uint32_t learning =
        r.learning_nodes > 0 ? r.learning_nodes : spec.nodes();  // Byzantine nodes are not evaluated
    std::size_t evaluated = std::min<std::size_t>(s.eval_nodes() == 0 ? learning : s.eval_nodes(), learning);
    std::printf(
        "\nfinal (round %llu): averaged-model test accuracy %.4f, node accuracy mean %.4f (min %.4f, max "
        "%.4f) "
        "over %zu of %u nodes\n",
        static_cast<unsigned long long>(last.round), last.avg_acc, last.acc_mean, last.acc_min, last.acc_max,
        evaluated, learning);
    std::printf("stopped: %s\n", r.stop_reason.c_str());
  }
  double dense = static_cast<double>(r.messages_sent) * 4.0 * static_cast<double>(r.params_per_node);
  // An all-reduce sends parts of a model (the ring: 1 / n of one each).
  if (plan.job().ring_allreduce() && spec.nodes() > 0) dense *= engine::AllReduceMessageFraction(plan.job());
  std::printf("traffic: %s MB sent", Megabytes(last.bytes_sent).c_str());
  if (last.bytes_sent > 0)
    std::printf(" (%s)", DenseRatio(dense, static_cast<double>(last.bytes_sent)).c_str());
  std::printf(", %llu messages lost\n", static_cast<unsigned long long>(last.messages_lost));
  if (r.faults.sent > 0) {
    const FaultStats& f = r.faults;
    std::printf(
        "faults: %llu of %llu sends partitioned, %llu dropped, %llu duplicated, %llu reordered, %llu "
        "delayed, "
        "%llu corrupted (%llu rejected by decoders, %llu decoded)\n",
        static_cast<unsigned long long>(f.partitioned), static_cast<unsigned long long>(f.sent),
        static_cast<unsigned long long>(f.dropped), static_cast<unsigned long long>(f.duplicated),
        static_cast<unsigned long long>(f.reordered), static_cast<unsigned long long>(f.delayed),
        static_cast<unsigned long long>(f.corrupted), static_cast<unsigned long long>(r.corrupt_rejected),
        static_cast<unsigned long long>(r.corrupt_accepted));
  }
  std::string refused;
  for (std::size_t k = 0; k < kRefusalKinds; ++k) {
    if (r.refused[k] == 0) continue;
    refused += (refused.empty() ? "" : ", ") + std::to_string(r.refused[k]) + " " +
               RefusalName(static_cast<Refusal>(k));
  }
  // What the receivers' checks kept out of every model (docs/security.md, Insiders).
  if (!refused.empty()) std::printf("refused updates: %s\n", refused.c_str());
  if (r.ranks > 1) {
    std::printf("ranks: %d (%s placement), %llu messages (%s MB) crossed between them, %llu time windows\n",
                r.ranks, r.placement.c_str(), static_cast<unsigned long long>(r.cross_rank_messages),
                Megabytes(r.cross_rank_bytes).c_str(), static_cast<unsigned long long>(r.windows));
  }
  std::printf("speed: %.3g rounds/s (%.1f s wall, %.1f s virtual), peak RSS %s MB%s, node state %s MB\n",
              r.wall_s > 0 ? static_cast<double>(r.rounds_done) / r.wall_s : 0.0, r.wall_s, r.virtual_s,
              Megabytes(r.peak_rss_bytes).c_str(),
              r.ranks > 1 ? (" per rank (" + std::to_string(r.ranks) + " ranks)").c_str() : "",
              Megabytes(r.state_bytes).c_str());
}

// Under mpirun, ranks other than 0 keep quiet until the run: the flags and the
// scenario are the same on every rank, and so are their errors.
class QuietRank {
 public:
  explicit QuietRank(bool quiet) {
    if (!quiet) return;
    std::fflush(stderr);
    saved_ = dup(2);
    FILE* null = std::fopen("/dev/null", "w");
    if (null != nullptr) {
      dup2(fileno(null), 2);
      std::fclose(null);
    }
  }
  ~QuietRank() { Restore(); }
  void Restore() {
    if (saved_ < 0) return;
    std::fflush(stderr);
    dup2(saved_, 2);
    close(saved_);
    saved_ = -1;
  }

 private:
  int saved_ = -1;
};

int RunSim(int argc, char** argv) {
  const int launched = sim::mpi::LaunchedRanks();
  const int rank = sim::mpi::LaunchedRank();
  QuietRank quiet_rank(launched > 1 && rank > 0);
  cxxopts::Options options(
      "murmur sim",
      "Run N gossip nodes in one process, in virtual time. With no arguments: the default\n"
      "scenario (Fashion-MNIST, 64 nodes, ring, D-PSGD, MLP, top-1% with error feedback).\n"
      "Every scenario field is a flag; --scenario FILE reads them from protobuf text or JSON\n"
      "first (flags override it). Under mpirun -np R (a build with MPI), the gossip nodes\n"
      "are spread over R processes with the same result (docs/simulator.md).\n");
  options.add_options()("h,help", "show this help")("scenario", "scenario file (protobuf text or JSON)",
                                                    cxxopts::value<std::string>())(
      "job", "a murmurd job file (JobConfig): run its spec { } block here (after --scenario, before flags)",
      cxxopts::value<std::string>())("print-scenario",
                                     "print the effective scenario as protobuf text and exit (its spec { } "
                                     "block is what a murmurd job file holds)")("quiet", "no progress bar")(
      "log-level", "debug, info, warning or error", cxxopts::value<std::string>())(
      "model-digests",
      "at the end, print each node's model digest (BLAKE2b-512 of its parameters; federated: the global "
      "model's), to compare with `murmur job status --model-digests` of a fleet");
  AddScenarioFlags(options);
  cxxopts::ParseResult result;
  try {
    result = options.parse(argc, argv);
  } catch (const cxxopts::exceptions::no_such_option& e) {
    return UsageError("sim", e.what() + FlagSuggestion(e.what()));
  } catch (const std::exception& e) {
    return UsageError("sim", e.what());
  }
  if (result.count("help")) {
    std::printf("%s\n", options.help({"", "scenario"}).c_str());
    return kExitOk;
  }
  if (!result.unmatched().empty())
    return UsageError("sim", "unexpected argument '" + result.unmatched()[0] + "'");
  if (result.count("log-level")) {
    LogLevel level;
    if (!ParseLogLevel(result["log-level"].as<std::string>(), &level)) {
      return UsageError("sim", "--log-level wants debug, info, warning or error");
    }
    SetLogLevel(level);
  }
  proto::Scenario scenario;
  if (result.count("scenario")) {
    std::vector<std::string> warnings;
    auto loaded = config::LoadScenarioFile(result["scenario"].as<std::string>(), &warnings);
    if (!loaded.ok()) return UsageError("sim", loaded.status().message());
    for (const auto& w : warnings) std::fprintf(stderr, "murmur sim: warning: %s\n", w.c_str());
    scenario = std::move(loaded).value();
  }
  if (result.count("job")) {  // a murmurd job file: its spec, in a simulated world
    std::vector<std::string> warnings;
    auto job = config::LoadJobConfig(result["job"].as<std::string>(), &warnings);
    if (!job.ok()) return UsageError("sim", job.status().message());
    for (const auto& w : warnings) std::fprintf(stderr, "murmur sim: warning: %s\n", w.c_str());
    *scenario.mutable_spec() = job->spec();
  }
  if (Status st = ApplyScenarioFlags(result, scenario); !st.ok()) return UsageError("sim", st.message());
  auto planned = sim::PlanScenario(scenario);
  if (!planned.ok()) return UsageError("sim", planned.status().message());
  const sim::ScenarioPlan& plan = planned.value();
  for (const auto& w : sim::ScenarioWarnings(scenario))
    std::fprintf(stderr, "murmur sim: warning: %s\n", w.c_str());
  if (result.count("print-scenario")) {
    std::printf("%s", config::ToTextWithDefaults(scenario).c_str());
    return kExitOk;
  }
  // Spread over the ranks mpirun started: each runs a block of the nodes, rank 0 reports.
  std::unique_ptr<sim::RankGroup> ranks;
  if (launched > 1) {
    auto made = sim::mpi::MakeMpiRanks();
    if (!made.ok()) return Failure("sim", made.status().message());
    ranks = std::move(made).value();
  }
  quiet_rank.Restore();
  if (rank > 0 && launched > 1 && std::freopen("/dev/null", "w", stdout) == nullptr) return kExitFailure;
  const bool quiet = result.count("quiet") > 0 || rank > 0;
  ProgressBar bar("sim", scenario.spec().rounds());
  std::string status = "";
  auto progress = [&](std::uint64_t done, std::uint64_t, const sim::EvalPoint* p) {
    if (p != nullptr) {
      char buf[96];
      if (IsTextDataset(scenario.spec()))
        std::snprintf(buf, sizeof(buf), "avg-model perplexity %.3f", std::exp(p->avg_loss));
      else
        std::snprintf(buf, sizeof(buf), "avg-model acc %.4f  node acc %.4f", p->avg_acc, p->acc_mean);
      status = buf;
    }
    if (!quiet) bar.Update(done, status);
  };
  const proto::JobSpec& spec = scenario.spec();
  if (rank > 0) {
    // Rank 0 says what runs.
  } else if (plan.job().federated()) {
    std::fprintf(stderr, "murmur sim: %u clients (%zu per round), %s, %s, %llu rounds\n",
                 plan.job().fed().clients, plan.job().fed().clients_per_round, RunLabel(plan.job()).c_str(),
                 spec.model().c_str(), static_cast<unsigned long long>(spec.rounds()));
  } else {
    std::fprintf(stderr, "murmur sim: %u nodes, %s, %s, %s, %llu rounds\n", spec.nodes(),
                 spec.topology().c_str(), RunLabel(plan.job()).c_str(), spec.model().c_str(),
                 static_cast<unsigned long long>(spec.rounds()));
  }
  sim::RunOptions run_options;
  run_options.ranks = ranks.get();
  run_options.keep_final_models = result.count("model-digests") > 0;
  auto run = sim::RunScenario(plan, progress, run_options);
  if (!quiet && run.ok()) bar.Finish(status);
  if (!quiet && !run.ok()) bar.Abandon();  // no "sim done" before the error
  if (!run.ok()) {
    if (sim::FailedOnAnotherRank(run.status())) return kExitFailure;
    return Failure("sim", (launched > 1 ? "rank " + std::to_string(rank) + ": " : std::string()) +
                              run.status().message());
  }
  std::printf("%s\n", run->description.c_str());
  PrintTable(*run, IsTextDataset(scenario.spec()));
  PrintSummary(*run, plan);
  if (run_options.keep_final_models && !run->final_models.empty()) {
    if (plan.job().federated()) {
      std::printf("%s\n", GlobalModelDigestLine(crypto::ModelBlake2b(run->final_models.front())).c_str());
    } else {
      std::vector<std::pair<std::uint32_t, std::string>> digests;
      for (std::size_t i = 0; i < run->final_models.size(); ++i)
        digests.emplace_back(static_cast<std::uint32_t>(i), crypto::ModelBlake2b(run->final_models[i]));
      std::printf("%s\n", ModelDigestsLine(digests).c_str());
    }
  }
  if (!scenario.plot().empty() && rank == 0) {
    Status st = PlotMetrics({run->points}, {RunLabel(plan.job())}, scenario.plot());
    if (!st.ok()) return Failure("sim", st.message());
    std::printf("plot: %s\n", scenario.plot().c_str());
  }
  return kExitOk;
}

}  // namespace

MURMUR_COMMAND("sim",
               "simulate decentralized learning: N nodes in virtual time (default: Fashion-MNIST, 64 nodes)",
               RunSim);

}  // namespace murmur::cli
