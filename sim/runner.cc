#include "sim/runner.h"

#include <utility>

#include "sim/run/federated_run.h"
#include "sim/run/gossip_run.h"

namespace murmur::sim {

Result<RunSummary> RunScenario(const ScenarioPlan& plan, const ProgressFn& progress, RunOptions options) {
  if (plan.job().federated()) {
    FederatedStats stats;
    MURMUR_ASSIGN_OR_RETURN(RunSummary summary, RunFederatedScenario(plan, progress, &stats, options));
    if (options.keep_final_models) summary.final_models.push_back(std::move(stats.final_model));
    return summary;
  }
  return RunGossipScenario(plan, progress, std::move(options));
}

Result<RunSummary> RunScenario(const proto::Scenario& s, const ProgressFn& progress, RunOptions options) {
  MURMUR_ASSIGN_OR_RETURN(ScenarioPlan plan, PlanScenario(s));
  return RunScenario(plan, progress, std::move(options));
}

}  // namespace murmur::sim
