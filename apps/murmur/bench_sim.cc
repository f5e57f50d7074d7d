// murmur bench sim: simulated rounds per second and peak memory of the
// acceptance configuration (ring, D-PSGD, MLP 784-128-10, batch 32, IID
// Fashion-MNIST, no compression), next to its floor measured in the same run:
// the round's training FLOPs at the GEMM rate plus the bytes its mixing moves
// at the memory bandwidth.
#include <cxxopts.hpp>

#include <cstdio>
#include <sstream>

#include "apps/murmur/bench.h"
#include "apps/murmur/command.h"
#include "core/sysinfo.h"
#include "core/thread_pool.h"
#include "ml/model_spec.h"
#include "sim/runner.h"

namespace murmur::cli {

namespace {

struct SimRate {
  double rounds_per_s = 0;
  sim::RunSummary summary;
};

// Times rounds 1..R (after the first round, before the final evaluation), so
// the two evaluations and the set-up are not counted.
Result<SimRate> TimeRun(const proto::Scenario& s) {
  std::chrono::steady_clock::time_point first, last;
  auto progress = [&](std::uint64_t done, std::uint64_t, const sim::EvalPoint* p) {
    if (p != nullptr) return;
    if (done == 1) first = std::chrono::steady_clock::now();
    if (done == s.spec().rounds()) last = std::chrono::steady_clock::now();
  };
  MURMUR_ASSIGN_OR_RETURN(sim::RunSummary summary, sim::RunScenario(s, progress));
  SimRate r;
  r.rounds_per_s =
      static_cast<double>(s.spec().rounds() - 1) / std::chrono::duration<double>(last - first).count();
  r.summary = std::move(summary);
  return r;
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
    ("h,help", "show this help");
  // clang-format on
  std::vector<std::uint32_t> node_counts;
  unsigned rounds;
  int threads;
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
    while (std::getline(ss, item, ',')) node_counts.push_back(static_cast<std::uint32_t>(std::stoul(item)));
    rounds = args["rounds"].as<unsigned>();
    threads = args["threads"].as<int>();
    seconds = args["seconds"].as<double>();
    compression = args["compression"].as<std::string>();
    model_spec = args["model"].as<std::string>();
  } catch (const std::exception& e) {
    return UsageError(kCmd, e.what());
  }
  if (rounds < 2) return UsageError(kCmd, "--rounds must be at least 2");
  if (threads < 1 || threads > 1024) return UsageError(kCmd, "--threads outside [1, 1024]");
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
  std::printf("%7s %10s %12s %12s %7s %12s %12s %12s\n", "nodes", "rounds/s", "floor r/s", "train+mix",
              "ratio", "peak RSS MB", "state MB", "RSS/state");
  for (std::uint32_t n : node_counts) {
    proto::Scenario s;
    s.mutable_spec()->set_nodes(n);
    s.mutable_spec()->set_model(model_spec);
    s.mutable_spec()->set_compression(compression);
    s.mutable_spec()->set_rounds(rounds);
    s.mutable_spec()->set_eval_every(rounds);
    s.mutable_spec()->set_batch(batch);
    s.set_threads(static_cast<std::uint32_t>(threads));
    auto run = TimeRun(s);
    if (!run.ok()) return Failure(kCmd, run.status().ToString());
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
  }
  std::printf("(peak RSS is the process's, dataset included: Fashion-MNIST as floats is %.0f MB)\n",
              70000.0 * 785 * 4 / 1e6);
  return kExitOk;
}

}  // namespace murmur::cli
