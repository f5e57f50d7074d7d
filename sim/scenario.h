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

#include "core/status.h"
#include "proto/scenario.pb.h"

namespace murmur::sim {

Status ValidateScenario(const proto::Scenario& s);

}  // namespace murmur::sim
