// RunGossipScenario: a gossip scenario's run (sim/runner.h's RunScenario
// dispatches here, and to sim/run/federated_run.h for federated ones): one
// gossip node per simulated device, built by the engine from the plan, on the
// simulator, with the Byzantine nodes and faults of the scenario, evaluated
// every `eval_every` rounds.
//
// Thread-safety: one run per call, as RunScenario.
#pragma once

#include "core/status.h"
#include "sim/run/run_summary.h"
#include "sim/run/scenario.h"

namespace murmur::sim {

// REQUIRES: a gossip plan.
Result<RunSummary> RunGossipScenario(const ScenarioPlan& plan, const ProgressFn& progress,
                                     RunOptions options);

}  // namespace murmur::sim
