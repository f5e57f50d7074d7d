// BuildOnRanks: the world of a scenario and a run of it (the gossip runner's
// or the federated one's), built on every rank of a partitioned run, the
// ranks agreeing that all of them are ready before the first window
// (AgreeOnBuild, sim/ranks/ranks.h). Internal to sim/.
//
// Thread-safety: called by each rank on its own thread.
#pragma once

#include <memory>

#include "core/status.h"
#include "proto/scenario.pb.h"
#include "sim/run/external_learning.h"
#include "sim/run/run_summary.h"
#include "sim/run/world.h"

namespace murmur::sim {

// Run must be constructible from (plan, world, progress, options) and
// have Status Build().
template <typename Run>
Result<std::unique_ptr<Run>> BuildOnRanks(const ScenarioPlan& plan, const ProgressFn& progress,
                                          const RunOptions& options) {
  std::unique_ptr<Run> run;
  Status built = [&]() -> Status {
    MURMUR_ASSIGN_OR_RETURN(std::unique_ptr<World> world, BuildWorld(plan, options.ranks));
    MURMUR_RETURN_IF_ERROR(AdoptLearning(options.learning, plan.job(), *world));
    run = std::make_unique<Run>(plan, std::move(world), progress, options);
    return run->Build();
  }();
  MURMUR_RETURN_IF_ERROR(AgreeOnBuild(options.ranks, std::move(built)));
  return run;
}

}  // namespace murmur::sim
