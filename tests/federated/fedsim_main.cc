// federated_sim: runs one federated scenario file through
// sim::RunFederatedScenario and prints its evaluation points as CSV, with the
// privacy spent, the straggler counts, the top server's bytes and the
// resident memory (RSS) at every evaluation. The acceptance experiments of
// docs/federated.md were measured with it; `murmur sim` runs the same function.
//
// Usage: federated_sim SCENARIO.textproto [field=value ...]
// (each override is a protobuf text field, e.g. robust="median" rounds=50).
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "core/sysinfo.h"

#include "config/files.h"
#include "sim/run/federated_run.h"
#include "sim/run/scenario.h"

int main(int argc, char** argv) {
  using namespace murmur;
  if (argc < 2) {
    std::fprintf(stderr, "usage: federated_sim SCENARIO.textproto [field=value ...]\n");
    return 2;
  }
  auto s = config::LoadScenarioFile(argv[1]);
  if (!s.ok()) {
    std::fprintf(stderr, "%s\n", s.status().ToString().c_str());
    return 2;
  }
  std::string text;
  for (int i = 2; i < argc; ++i) {
    std::string kv = argv[i];
    const auto eq = kv.find('=');
    if (eq == std::string::npos) {
      std::fprintf(stderr, "override '%s' is not field=value\n", argv[i]);
      return 2;
    }
    text += kv.substr(0, eq) + ": " + kv.substr(eq + 1) + "\n";
  }
  auto overrides = config::ParseScenario(text, "overrides");
  if (!overrides.ok()) {
    std::fprintf(stderr, "%s\n", overrides.status().ToString().c_str());
    return 2;
  }
  auto scenario = std::move(s);
  scenario.value().MergeFrom(overrides.value());
  sim::FederatedStats stats;
  // Resident memory at every evaluation: flat from round 10 on means nothing accumulates per round.
  std::vector<std::pair<std::uint64_t, std::uint64_t>> rss;
  auto progress = [&rss](std::uint64_t, std::uint64_t, const sim::EvalPoint* p) {
    if (p != nullptr && (rss.empty() || rss.back().first != p->round))
      rss.emplace_back(p->round, CurrentRssBytes());
  };
  auto run = sim::RunFederatedScenario(scenario.value(), progress, &stats);
  if (!run.ok()) {
    std::fprintf(stderr, "%s\n", run.status().ToString().c_str());
    return 1;
  }
  std::printf("# %s\n%s\n", run.value().description.c_str(), sim::CsvHeader().c_str());
  for (const auto& p : run.value().points) std::printf("%s\n", sim::CsvRow(p).c_str());
  std::printf(
      "# rounds %llu, virtual %.1f s, wall %.1f s, peak RSS %.1f MiB, epsilon %.4f, results %llu kept "
      "%llu dropped, %zu contributors, top server bytes %llu sent %llu received, stop: %s\n",
      static_cast<unsigned long long>(run.value().rounds_done), run.value().virtual_s, run.value().wall_s,
      static_cast<double>(run.value().peak_rss_bytes) / (1 << 20), stats.epsilon,
      static_cast<unsigned long long>(stats.results_accepted),
      static_cast<unsigned long long>(stats.results_dropped), stats.contributors,
      static_cast<unsigned long long>(stats.top_bytes_sent),
      static_cast<unsigned long long>(stats.top_bytes_received), stats.stop_reason.c_str());
  std::printf("# RSS MiB by round:");
  for (const auto& [round, bytes] : rss)
    std::printf(" %llu:%.1f", static_cast<unsigned long long>(round), static_cast<double>(bytes) / (1 << 20));
  std::printf("\n");
  return 0;
}
