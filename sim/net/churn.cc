#include "sim/net/churn.h"

#include <cmath>
#include <fstream>
#include <memory>
#include <sstream>

namespace murmur::sim {

namespace {

struct MarkovState {
  Simulator* sim;
  ChurnOptions options;
  Nanos horizon;
  ChurnCallback on_change;
  std::vector<Rng> rngs;
};

Nanos Draw(Rng& rng, double mean_ns) {
  return Nanos(static_cast<std::int64_t>(rng.Exponential(1.0 / mean_ns)) + 1);
}

void ScheduleNext(const std::shared_ptr<MarkovState>& st, NodeId node) {
  Simulator& sim = *st->sim;
  double a = sim.device(node).availability;
  double on_ns = static_cast<double>(st->options.mean_online.count());
  double mean = sim.online(node) ? on_ns : on_ns * (1 - a) / a;
  Nanos at = sim.now() + Draw(st->rngs[node], mean);
  if (at > st->horizon) return;
  sim.AtNodeTimeline(node, at, [st, node] {
    bool next = !st->sim->online(node);
    st->sim->SetOnline(node, next);
    if (st->on_change) st->on_change(node, next);
    ScheduleNext(st, node);
  });
}

}  // namespace

void StartMarkovChurn(Simulator& sim, const ChurnOptions& options, Nanos horizon, ChurnCallback on_change,
                      bool every_node) {
  auto st = std::make_shared<MarkovState>(MarkovState{&sim, options, horizon, std::move(on_change), {}});
  st->rngs.reserve(sim.num_nodes());
  for (NodeId i = 0; i < sim.num_nodes(); ++i) st->rngs.emplace_back(sim.seed(), i, RngPurpose::kDevice);
  for (NodeId i = 0; i < sim.num_nodes(); ++i) {
    Rng& rng = st->rngs[i] = st->rngs[i].Fork(0xC4u);
    double a = sim.device(i).availability;
    if (a >= 1.0 || (!every_node && !sim.placement().local(i))) continue;  // another rank runs it
    bool start_online = !options.random_initial_state || rng.Bernoulli(a);
    if (!start_online) {
      sim.SetOnline(i, false);
      if (st->on_change) st->on_change(i, false);
    }
    ScheduleNext(st, i);
  }
}

Result<std::vector<ChurnEvent>> ReadChurnTrace(const std::string& path, std::size_t num_nodes) {
  std::ifstream in(path);
  if (!in) return Status::NotFound("churn trace '" + path + "' cannot be opened");
  std::vector<ChurnEvent> events;
  std::string line;
  std::size_t lineno = 0;
  while (std::getline(in, line)) {
    ++lineno;
    if (line.empty() || line[0] == '#') continue;
    if (lineno == 1 && line.rfind("node", 0) == 0) continue;
    std::string where = path + ":" + std::to_string(lineno) + ": ";
    std::stringstream ls(line);
    std::string a, b, c, extra;
    if (!std::getline(ls, a, ',') || !std::getline(ls, b, ',') || !std::getline(ls, c, ',') ||
        std::getline(ls, extra, ',')) {
      return Status::InvalidArgument(where + "expected 3 fields: node,time_s,online");
    }
    char* end = nullptr;
    unsigned long long node = std::strtoull(a.c_str(), &end, 10);
    if (a.empty() || *end != '\0')
      return Status::InvalidArgument(where + "node '" + a + "' is not an integer");
    if (node >= num_nodes) {
      return Status::OutOfRange(where + "node " + a + " out of range for " + std::to_string(num_nodes) +
                                " nodes");
    }
    double t = std::strtod(b.c_str(), &end);
    if (b.empty() || *end != '\0' || !std::isfinite(t) || t < 0) {
      return Status::InvalidArgument(where + "time '" + b + "' is not a non-negative number");
    }
    if (c != "0" && c != "1")
      return Status::InvalidArgument(where + "online must be 0 or 1, got '" + c + "'");
    events.push_back({Nanos(static_cast<std::int64_t>(t * 1e9)), static_cast<NodeId>(node), c == "1"});
  }
  return events;
}

void StartTraceChurn(Simulator& sim, std::vector<ChurnEvent> events, ChurnCallback on_change,
                     bool every_node) {
  auto cb = std::make_shared<ChurnCallback>(std::move(on_change));
  for (const ChurnEvent& e : events) {
    if (!every_node && !sim.placement().local(e.node)) continue;  // another rank runs it
    sim.AtNodeTimeline(e.node, std::max(e.time, sim.now()), [&sim, e, cb] {
      sim.SetOnline(e.node, e.online);
      if (*cb) (*cb)(e.node, e.online);
    });
  }
}

}  // namespace murmur::sim
