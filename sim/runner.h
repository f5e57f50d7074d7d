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

#include "core/status.h"
#include "proto/scenario.pb.h"
#include "sim/run_summary.h"

namespace murmur::sim {

// REQUIRES: ValidateScenario(s).ok() (RunScenario checks and returns its Status otherwise).
Result<RunSummary> RunScenario(const proto::Scenario& s, const ProgressFn& progress = {},
                               RunOptions options = {});

}  // namespace murmur::sim
