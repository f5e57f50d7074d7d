// RunScenario: one `murmur sim` run, from a proto::Scenario to metrics.
//
// Builds the world (data and its partition, the model, device profiles, the
// topology or the vehicles' contact graphs, churn), one gossip node per
// simulated device running the chosen algorithm, then runs the simulator and
// evaluates every `eval_every` rounds: each evaluated node's own test
// accuracy, the averaged model's accuracy on the whole test set, consensus
// distance, and the bytes that crossed the network.
//
// Determinism: the metrics (all but wall time) depend only on the scenario,
// seed included, not on the thread count.
//
// Thread-safety: one run per call; runs on the calling thread plus the
// scenario's worker threads.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "core/faulty_env.h"
#include "core/status.h"
#include "proto/scenario.pb.h"
#include "sim/metrics.h"

namespace murmur::sim {

struct RunSummary {
  std::vector<EvalPoint> points;
  std::string description;  // one line: nodes, topology, algorithm, model, compression
  std::size_t params_per_node = 0;
  std::uint32_t learning_nodes = 0;  // nodes evaluated: all but the Byzantine ones
  std::uint64_t rounds_done = 0;
  double wall_s = 0;
  double virtual_s = 0;
  std::uint64_t peak_rss_bytes = 0;
  std::uint64_t state_bytes = 0;  // the nodes' own algorithm state (models and buffers)
  std::uint64_t messages_sent = 0;
  // Injected faults (fault_* fields), summed over the nodes.
  FaultStats faults;
  std::uint64_t corrupt_rejected = 0;  // corrupted messages the receivers' decoder refused
  std::uint64_t corrupt_accepted = 0;  // corrupted messages that still decoded (and were delivered)
};

// Called as rounds complete (done of total) and after each evaluation (with its point).
using ProgressFn = std::function<void(std::uint64_t done, std::uint64_t total, const EvalPoint* latest)>;

// REQUIRES: ValidateScenario(s).ok() (RunScenario checks and returns its Status otherwise).
Result<RunSummary> RunScenario(const proto::Scenario& s, const ProgressFn& progress = {});

}  // namespace murmur::sim
