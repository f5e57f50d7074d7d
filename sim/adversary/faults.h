// The scenario's injected faults: its `faults` (proto/faults.proto, checked
// and applied by engine/faults.h as murmurd's are) as a FaultPlan
// (core/fault_plan.h) applied by a FaultyEnv around every node's SimEnv, and
// the gossip decoder that a DecodingSink runs on corrupted messages in front
// of every node (core/corrupted_message.h).
//
// The probabilities and delays apply to every link for the whole run; the
// partition adds its windows (syntax in core/fault_plan.h). The simulator's
// own `loss`, latency and jitter stay as they are and act on what FaultyEnv
// lets through.
//
// Thread-safety: free functions; the plan is read-only once built.
#pragma once

#include <memory>

#include "core/corrupted_message.h"
#include "core/fault_plan.h"
#include "core/status.h"
#include "proto/scenario.pb.h"

namespace murmur::sim {

// Whether the scenario's faults ask for anything.
bool HasScenarioFaults(const proto::Scenario& s);

// Checks the faults; errors name the field ("fault field 'drop' ...").
Status ValidateScenarioFaults(const proto::Scenario& s);

// The plan of the faults; ValidateScenarioFaults's Status when they are bad.
Result<std::unique_ptr<FaultPlan>> MakeScenarioFaultPlan(const proto::Scenario& s);

// Decodes gossip messages (gossip::GossipMessage::Decode with default limits),
// as node::AsioEnv does on a daemon.
WireDecoder GossipWireDecoder();

}  // namespace murmur::sim
