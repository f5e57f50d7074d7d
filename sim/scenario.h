// ValidateScenario: the check of a `murmur sim` scenario (proto/scenario.proto).
// The embedded JobSpec is checked by engine::ValidateJobSpec for the
// simulator host, the one validation murmurd runs too; this adds what only a
// simulation has: the simulated world (devices, links, churn, vehicles, edge
// devices, faults), the simulated gossip attackers and the run's threads.
// Errors are InvalidArgument naming the field ("scenario field 'loss' must be
// in [0, 1)"; "spec field 'lr' ..." for the spec).
//
// Scenario files are read by engine::LoadScenarioFile (engine/files.h).
//
// Thread-safety: free functions.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"
#include "proto/scenario.pb.h"
#include "sim/simulator.h"

namespace murmur::sim {

Status ValidateScenario(const proto::Scenario& s);

// What a valid scenario's fields say of the network (message and packet
// loss, latency, jitter, transport); the links model is the world's.
NetworkOptions ScenarioNetwork(const proto::Scenario& s);

// Fields that run, but maybe not as the user meant: `loss`, the old name of
// message_loss, which users set meaning a link's packet loss.
std::vector<std::string> ScenarioWarnings(const proto::Scenario& s);

}  // namespace murmur::sim
