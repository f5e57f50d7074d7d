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
#include "sim/ranks/ranks.h"  // FailedOnAnotherRank
#include "sim/run/run_summary.h"
#include "sim/run/scenario.h"

namespace murmur::sim {

// Runs a planned scenario (sim/run/scenario.h).
// Spread over ranks (options.ranks), every rank calls it with the same
// scenario and runs its block of the nodes; each gets the whole summary. A
// rank that fails before the run starts returns its error and the others
// FailedOnAnotherRank; a failure during the run aborts every rank.
Result<RunSummary> RunScenario(const ScenarioPlan& plan, const ProgressFn& progress = {},
                               RunOptions options = {});
// Plans `s` (PlanScenario, whose Status it returns when the scenario is bad) and runs it.
Result<RunSummary> RunScenario(const proto::Scenario& s, const ProgressFn& progress = {},
                               RunOptions options = {});

}  // namespace murmur::sim
