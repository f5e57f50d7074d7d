// RunSummary: what one simulation run reports (sim/runner.h,
// sim/run/federated_run.h): the evaluation points, a one-line description, the
// rounds and time it took, memory and traffic, and the faults injected; the
// progress callback a run calls as it goes, and the options a caller adds.
//
// Thread-safety: a value.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/faulty_env.h"
#include "sim/run/metrics.h"

namespace murmur::sim {

struct RunSummary {
  std::vector<EvalPoint> points;
  std::string description;  // one line: nodes, topology, algorithm, model, compression
  std::size_t params_per_node = 0;
  std::uint32_t learning_nodes = 0;  // nodes evaluated: all but the Byzantine ones
  std::uint64_t rounds_done = 0;
  double wall_s = 0;
  double virtual_s = 0;
  std::uint64_t peak_rss_bytes = 0;  // partitioned: the largest of any rank
  int ranks = 1;                     // processes the run was spread over
  // How nodes were placed on them (sim/ranks/placement.h): blocks, graph, or edge
  // clusters (federated, each edge aggregator with its clients).
  std::string placement = "blocks";
  // Spread over ranks: what crossed between them, and the time windows run.
  std::uint64_t cross_rank_messages = 0;
  std::uint64_t cross_rank_bytes = 0;
  std::uint64_t windows = 0;
  std::uint64_t state_bytes = 0;  // the nodes' own algorithm state (models and buffers)
  std::uint64_t messages_sent = 0;
  // Injected faults (fault_* fields), summed over the nodes.
  FaultStats faults;
  std::uint64_t corrupt_rejected = 0;  // corrupted messages the receivers' decoder refused
  std::uint64_t corrupt_accepted = 0;  // corrupted messages that still decoded (and were delivered)
  // Received updates the nodes refused (Env::Refuse), by core::Refusal, over every rank.
  std::array<std::uint64_t, kRefusalKinds> refused{};
  std::string stop_reason;  // why the run ended (also the last point's `stop`)
  double epsilon = 0;       // DP-FedAvg: (epsilon, dp_delta) spent; 0 otherwise
  // Federated: clients (flat) or edges with at least one accepted result, of `clients`.
  std::size_t contributors = 0;
  std::size_t clients = 0;
  // With RunOptions::keep_final_models: every learning node's model as it
  // ended the last round (Byzantine nodes left out); federated: the server's.
  std::vector<std::vector<float>> final_models;
};

struct ExternalLearning;
class RankGroup;

// How a run reports beyond its metrics, and what a caller adds to it.
struct RunOptions {
  bool keep_final_models = false;  // fill RunSummary::final_models (tests, conformance checks)
  // Read between events: once it holds true the run stops where it is (no
  // event is cut short), evaluates, and reports stop reason "interrupted".
  // Must outlive the run.
  const std::atomic<bool>* interrupt = nullptr;
  // The caller's learners (sim/run/external_learning.h); null: ml::MlLearner on
  // the spec's model. Must outlive the run.
  const ExternalLearning* learning = nullptr;
  // The ranks a gossip run is spread over (sim/ranks/ranks.h), each running a block
  // of the nodes; every rank calls RunScenario with the same scenario. Null:
  // one process. Must outlive the run.
  RankGroup* ranks = nullptr;
};

// Called as rounds complete (done of total) and after each evaluation (with its point).
using ProgressFn = std::function<void(std::uint64_t done, std::uint64_t total, const EvalPoint* latest)>;

}  // namespace murmur::sim
