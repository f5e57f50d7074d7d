// PlanScenario: a `murmur sim` scenario (proto/scenario.proto) read and
// checked once. The embedded JobSpec is planned by engine::PlanJob for the
// simulator host, the one reading murmurd runs too; this adds what only a
// simulation has: the simulated world (devices, links, churn, vehicles, edge
// devices, faults), the simulated gossip attackers and the run's threads.
// Errors are InvalidArgument naming the field ("scenario field 'loss' must be
// in [0, 1)"; "spec field 'lr' ..." for the spec). A run (sim/runner.h) takes
// the plan; each process plans its scenario once (MPI ranks: each rank).
//
// Scenario files are read by config::LoadScenarioFile (config/files.h).
//
// Thread-safety: free functions.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "core/status.h"
#include "engine/plan.h"
#include "proto/scenario.pb.h"
#include "sim/net/simulator.h"

namespace murmur::sim {

class ScenarioPlan {
 public:
  const proto::Scenario& scenario() const { return scenario_; }
  const engine::JobPlan& job() const { return job_; }

 private:
  friend Result<ScenarioPlan> PlanScenario(const proto::Scenario& s);
  ScenarioPlan(proto::Scenario scenario, engine::JobPlan job)
      : scenario_(std::move(scenario)), job_(std::move(job)) {}

  proto::Scenario scenario_;
  engine::JobPlan job_;
};

Result<ScenarioPlan> PlanScenario(const proto::Scenario& s);

// PlanScenario's Status, for a caller that only checks.
Status ValidateScenario(const proto::Scenario& s);

// What a valid scenario's fields say of the network (message and packet
// loss, latency, jitter, transport); the links model is the world's.
NetworkOptions ScenarioNetwork(const proto::Scenario& s);

// Fields that run, but maybe not as the user meant: `loss`, the old name of
// message_loss, which users set meaning a link's packet loss.
std::vector<std::string> ScenarioWarnings(const proto::Scenario& s);

}  // namespace murmur::sim
