// murmur bench sim: simulated rounds per second and peak memory of the
// acceptance configuration (ring, D-PSGD, MLP 784-128-10, batch 32, IID
// Fashion-MNIST, no compression), next to its floor measured in the same run:
// the round's training FLOPs at the GEMM rate plus the bytes its mixing moves
// at the memory bandwidth. With --ranks R it also runs each configuration
// spread over R MPI processes of one thread each (mpirun, started from here)
// and compares them with this process and its threads: rounds/s, and peak
// memory per rank against the one process's.
#include <unistd.h>

#include <cxxopts.hpp>

#include <cstdio>
#include <cstring>
#include <memory>
#include <sstream>

#include "apps/murmur/bench.h"
#include "apps/murmur/command.h"
#include "core/simd.h"
#include "core/sysinfo.h"
#include "core/thread_pool.h"
#include "ml/model_spec.h"
#include "ml/synthetic.h"
#include "sim/mpi/mpi.h"
#include "sim/runner.h"

namespace murmur::cli {

namespace {

struct SimRate {
  double rounds_per_s = 0;
  sim::RunSummary summary;
};

// Times rounds 1..R (after the first round, before the final evaluation), so
// the two evaluations and the set-up are not counted.
Result<SimRate> TimeRun(const proto::Scenario& s, sim::RankGroup* ranks = nullptr) {
  std::chrono::steady_clock::time_point first, last;
  auto progress = [&](std::uint64_t done, std::uint64_t, const sim::EvalPoint* p) {
    if (p != nullptr) return;
    if (done == 1) first = std::chrono::steady_clock::now();
    if (done == s.spec().rounds()) last = std::chrono::steady_clock::now();
  };
  sim::RunOptions options;
  options.ranks = ranks;
  MURMUR_ASSIGN_OR_RETURN(sim::RunSummary summary, sim::RunScenario(s, progress, options));
  SimRate r;
  r.rounds_per_s =
      static_cast<double>(s.spec().rounds() - 1) / std::chrono::duration<double>(last - first).count();
  r.summary = std::move(summary);
  return r;
}

proto::Scenario BenchScenario(std::uint32_t nodes, const std::string& model, const std::string& compression,
                              unsigned rounds, int threads) {
  proto::Scenario s;
  s.mutable_spec()->set_nodes(nodes);
  s.mutable_spec()->set_model(model);
  s.mutable_spec()->set_compression(compression);
  s.mutable_spec()->set_rounds(rounds);
  s.mutable_spec()->set_eval_every(rounds);
  s.mutable_spec()->set_batch(32);
  s.set_threads(static_cast<std::uint32_t>(threads));
  return s;
}

// What a rank of `murmur bench sim` under mpirun prints (rank 0 only), and
// the parent reads back.
constexpr const char* kRanksLine = "ranks %d nodes %u rounds/s %lf peak-rss-per-rank %lf";

// The same configuration in a process of its own, started from here (so that
// its peak memory is the run's alone, without this process's floor
// measurements): with ranks > 0 on that many MPI processes of one thread
// each, through mpirun, else in one process with `threads` threads. Returns
// rounds/s and peak RSS per process (bytes).
Result<std::pair<double, double>> RunApart(int ranks, int threads, std::uint32_t nodes, unsigned rounds,
                                           const std::string& model, const std::string& compression) {
  char self[4096];
  const ssize_t len = readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (len <= 0) return Status::Internal("cannot find this program (/proc/self/exe)");
  self[len] = '\0';
  std::ostringstream cmd;
  if (ranks > 0)
    cmd << "mpirun --oversubscribe" << (geteuid() == 0 ? " --allow-run-as-root" : "") << " -np " << ranks
        << " ";
  cmd << "'" << self << "' bench sim --run-only --nodes " << nodes << " --rounds " << rounds << " --threads "
      << threads << " --model '" << model << "' --compression '" << compression << "' 2>&1";
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(cmd.str().c_str(), "r"), pclose);
  if (pipe == nullptr) return Status::Unavailable("cannot run mpirun");
  char line[1024];
  std::string output;
  double rate = 0, rss = 0;
  int got_ranks = 0;
  unsigned got_nodes = 0;
  bool found = false;
  while (std::fgets(line, sizeof(line), pipe.get()) != nullptr) {
    output += line;
    if (std::sscanf(line, kRanksLine, &got_ranks, &got_nodes, &rate, &rss) == 4) found = true;
    // The partitioned run's windows, cross-rank bytes and window cost, as they are.
    if (ranks > 0 && (std::strstr(line, " windows ") != nullptr || std::strncmp(line, "mpi: ", 5) == 0))
      std::printf("  (%d ranks) %s", ranks, line);
  }
  const int code = pclose(pipe.release());
  if (!found || code != 0)
    return Status::Unavailable(
        "`" + cmd.str() + "` failed (is OpenMPI's mpirun installed, and murmur built with MPI?):\n" + output);
  return std::make_pair(rate, rss);
}

// The cost of what ranks do between windows, for the scaling model of
// docs/simulator.md: one window's collectives (the all-reduce of the next
// event time and the all-to-all of empty outboxes, then the all-reduce of
// finished rounds), in microseconds; and the all-to-all's rate, in GB/s per
// rank, with `bytes` to every other rank.
std::pair<double, double> MeasureWindowCost(sim::RankGroup& ranks, std::size_t bytes) {
  const int n = ranks.size();
  auto window = [&](std::size_t each) {
    std::int64_t v[2] = {1, 1};
    ranks.AllReduceMin(v);
    ranks.AllToAll(std::vector<sim::Bytes>(n, sim::Bytes(each)));
    std::int64_t done = 1;
    ranks.AllReduceMin(std::span(&done, 1));
  };
  for (int i = 0; i < 100; ++i) window(0);
  const int windows = 2000;
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < windows; ++i) window(0);
  const double latency_us = SecondsSince(start) / windows * 1e6;
  const int reps = 20;
  window(bytes);
  start = std::chrono::steady_clock::now();
  for (int i = 0; i < reps; ++i) window(bytes);
  const double gbps = static_cast<double>(bytes) * (n - 1) * reps / SecondsSince(start) / 1e9;
  return {latency_us, gbps};
}

// --run-only: each configuration, and a line for it; under mpirun every rank
// runs it and rank 0 reports, then measures what a window costs.
int BenchSimRun(const std::vector<std::uint32_t>& node_counts, unsigned rounds, int threads,
                const std::string& model, const std::string& compression) {
  std::unique_ptr<sim::RankGroup> ranks = sim::MakeLocalRanks();
  if (sim::mpi::LaunchedRanks() > 1) {
    auto made = sim::mpi::MakeMpiRanks();
    if (!made.ok()) return Failure("bench sim", made.status().message());
    ranks = std::move(made).value();
  }
  for (std::uint32_t n : node_counts) {
    auto run = TimeRun(BenchScenario(n, model, compression, rounds, threads), ranks.get());
    if (!run.ok())
      ranks->Abort("murmur bench sim: rank " + std::to_string(ranks->rank()) + ": " + run.status().message());
    if (ranks->rank() == 0) {
      std::printf(kRanksLine, ranks->size(), n, run->rounds_per_s,
                  static_cast<double>(run->summary.peak_rss_bytes));
      std::printf(" windows %llu cross-rank-bytes %llu\n",
                  static_cast<unsigned long long>(run->summary.windows),
                  static_cast<unsigned long long>(run->summary.cross_rank_bytes));
      std::fflush(stdout);
    }
  }
  if (ranks->size() > 1) {
    const auto [latency_us, gbps] = MeasureWindowCost(*ranks, 1 << 20);
    if (ranks->rank() == 0)
      std::printf(
          "mpi: %d ranks, a window's collectives %.1f us, all-to-all %.2f GB/s per rank (1 MiB each)\n",
          ranks->size(), latency_us, gbps);
  }
  return kExitOk;
}

}  // namespace

int BenchSim(int argc, char** argv) {
  const char* kCmd = "bench sim";
  cxxopts::Options options("murmur bench sim",
                           "Simulator rounds/s and memory against the GEMM and bandwidth floors.");
  // clang-format off
  options.add_options()
    ("nodes", "comma-separated node counts", cxxopts::value<std::string>()->default_value("64,1000"))
    ("rounds", "rounds per run (timed from round 1 to the last)", cxxopts::value<unsigned>()->default_value("100"))
    ("compression", "compressor spec", cxxopts::value<std::string>()->default_value("none"))
    ("model", "model spec", cxxopts::value<std::string>()->default_value("mlp:128"))
    ("threads", "worker threads", cxxopts::value<int>()->default_value(std::to_string(HardwareThreads())))
    ("seconds", "seconds per floor measurement", cxxopts::value<double>()->default_value("2"))
    ("ranks", "also run each configuration on this many MPI processes of one thread each (mpirun), and "
     "in one process with --threads threads, each in a process of its own", cxxopts::value<int>()->default_value("0"))
    ("run-only", "no floors: run each configuration and print one line (what --ranks starts)")
    ("h,help", "show this help");
  // clang-format on
  std::vector<std::uint32_t> node_counts;
  unsigned rounds;
  int threads, ranks;
  bool run_only = false;
  double seconds;
  std::string compression, model_spec;
  try {
    auto args = options.parse(argc, argv);
    if (args.count("help")) {
      std::printf("%s\n", options.help().c_str());
      return kExitOk;
    }
    if (!args.unmatched().empty())
      return UsageError(kCmd, "unexpected argument '" + args.unmatched()[0] + "'");
    std::stringstream ss(args["nodes"].as<std::string>());
    std::string item;
    while (std::getline(ss, item, ',')) {
      // Every count is checked here, before the floors take their seconds.
      std::size_t used = 0;
      unsigned long n = 0;
      try {
        n = std::stoul(item, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used == 0 || used != item.size() || n < 2 || n > 10000000)
        return UsageError(kCmd,
                          "--nodes: each count must be a whole number in [2, 10000000], got '" + item + "'");
      node_counts.push_back(static_cast<std::uint32_t>(n));
    }
    if (node_counts.empty()) return UsageError(kCmd, "--nodes: no node count given");
    rounds = args["rounds"].as<unsigned>();
    threads = args["threads"].as<int>();
    seconds = args["seconds"].as<double>();
    ranks = args["ranks"].as<int>();
    run_only = args.count("run-only") > 0;
    compression = args["compression"].as<std::string>();
    model_spec = args["model"].as<std::string>();
  } catch (const std::exception& e) {
    return UsageError(kCmd, e.what());
  }
  if (rounds < 2) return UsageError(kCmd, "--rounds must be at least 2");
  if (threads < 1 || threads > 1024) return UsageError(kCmd, "--threads outside [1, 1024]");
  if (ranks < 0 || ranks > 1024) return UsageError(kCmd, "--ranks outside [0, 1024]");
  if (run_only || sim::mpi::LaunchedRanks() > 1)
    return BenchSimRun(node_counts, rounds, threads, model_spec, compression);
  auto model = ml::MakeModel(model_spec, 784, 10);
  if (!model.ok()) return UsageError(kCmd, model.status().message());
  const double flops_per_sample = (*model)->FlopsPerSample();
  const double d = static_cast<double>((*model)->layout().total_size());
  const int batch = 32;

  const double gemm = GemmRate(batch, 784, 128, threads, seconds);
  const double axpy = AxpyRate(threads, seconds);
  const double read = MemoryReadRate(threads, seconds);
  std::printf("floors (%d threads): GEMM %dx784x128 %.1f GFLOP/s, memory read %.1f GB/s, axpy %.1f GB/s\n",
              threads, batch, gemm, read, axpy);
  // The training part of a round against the core's FMA peak: each of 64
  // nodes' own models takes its SGD step of a batch in turn on one thread,
  // as the simulator's nodes do (random 784-dimensional samples: the speed
  // does not depend on the values).
  const double peak = FmaPeak(seconds / 4);
  ml::BlobsOptions blobs;
  blobs.num_samples = 4096;
  blobs.dim = 784;
  const ml::Dataset data = ml::MakeGaussianBlobs(blobs);
  const double part = NodeStepRate(**model, data, 64, batch, seconds);
  std::printf(
      "training part (64 nodes' models, one SGD step of %d samples each, one thread): %.1f GFLOP/s = %.2f of "
      "the "
      "FMA peak of one core (%s, %.1f GFLOP/s)\n",
      batch, part, part / peak, std::string(SimdName(SupportedSimd())).c_str(), peak);
  std::printf("%7s %10s %12s %12s %7s %12s %12s %12s\n", "nodes", "rounds/s", "floor r/s", "train+mix",
              "ratio", "peak RSS MB", "state MB", "RSS/state");
  struct Spread {
    std::uint32_t nodes;
    double rate, rss, ranks_rate, ranks_rss;
  };
  std::vector<Spread> spread;
  for (std::uint32_t n : node_counts) {
    auto run = TimeRun(BenchScenario(n, model_spec, compression, rounds, threads));
    if (!run.ok()) return Failure(kCmd, run.status().message());
    // Floor of one round: every node's batch through the model at the GEMM
    // rate, plus the least memory traffic mixing can take: per node, read its
    // own model and its 2 neighbours' and write the mixed model once.
    const double train_s = n * batch * flops_per_sample / (gemm * 1e9);
    const double mix_bytes = n * d * 4.0 * (2 + 2);
    const double mix_s = mix_bytes / (axpy * 1e9);
    const double floor = 1.0 / (train_s + mix_s);
    const auto& sum = run->summary;
    std::printf("%7u %10.2f %12.2f %5.1f+%4.1fms %7.2f %12.1f %12.1f %12.2f\n", n, run->rounds_per_s, floor,
                train_s * 1e3, mix_s * 1e3, run->rounds_per_s / floor, sum.peak_rss_bytes / 1e6,
                sum.state_bytes / 1e6,
                static_cast<double>(sum.peak_rss_bytes) / static_cast<double>(sum.state_bytes));
    std::fflush(stdout);
    if (ranks > 0) {
      auto one = RunApart(0, threads, n, rounds, model_spec, compression);
      if (!one.ok()) return Failure(kCmd, one.status().message());
      auto r = RunApart(ranks, 1, n, rounds, model_spec, compression);
      if (!r.ok()) return Failure(kCmd, r.status().message());
      spread.push_back({n, one->first, one->second, r->first, r->second});
    }
  }
  if (!spread.empty()) {
    std::printf(
        "\n%d MPI ranks of 1 thread against one process of %d threads (each run a process of its own):\n",
        ranks, threads);
    std::printf("%7s %12s %12s %7s %14s %14s %7s\n", "nodes", "1 proc r/s", "ranks r/s", "ratio",
                "1 proc RSS MB", "per rank MB", "ratio");
    for (const Spread& p : spread) {
      std::printf("%7u %12.2f %12.2f %7.2f %14.1f %14.1f %7.2f\n", p.nodes, p.rate, p.ranks_rate,
                  p.ranks_rate / p.rate, p.rss / 1e6, p.ranks_rss / 1e6, p.ranks_rss / p.rss);
    }
  }
  std::printf("(peak RSS is the process's, dataset included: Fashion-MNIST as floats is %.0f MB)\n",
              70000.0 * 785 * 4 / 1e6);
  return kExitOk;
}

}  // namespace murmur::cli
