// Faults injected at a node's sends: a proto::FaultConfig (proto/faults.proto;
// the scenario's `faults`, a daemon's config `faults` or `murmur fault set`)
// checked and turned into the FaultPlan (core/fault_plan.h) that a FaultyEnv
// applies, once for both hosts.
//
// The probabilities and delays become one rule for every link. The partition
// differs by host only in time: the simulator takes windows ("0-3|4-7@10s-70s",
// several separated by ';'), a daemon one partition without a window, held
// until the faults are replaced or cleared (a daemon drops only its own sends,
// so an operator sends it to the whole fleet).
//
// Thread-safety: pure functions; a plan is the caller's.
#pragma once

#include <string>

#include "core/fault_plan.h"
#include "core/status.h"
#include "proto/faults.pb.h"

namespace murmur::engine {

enum class FaultTime { kWindows, kUntilCleared };

// Node ids in a daemon's partition must be below this (a group's lookup table is this long at most).
inline constexpr NodeId kMaxFaultNodeId = 1 << 16;

// Whether the config injects anything.
bool HasFaults(const proto::FaultConfig& faults);

// InvalidArgument naming the field ("fault field 'drop' ...") and the limit.
// `nodes`: partition ids must be below it (kWindows: the run's nodes).
Status ValidateFaults(const proto::FaultConfig& faults, NodeId nodes, FaultTime time);

// Replaces everything in `plan` by `faults`; on an error the plan is unchanged.
Status ApplyFaults(const proto::FaultConfig& faults, NodeId nodes, FaultTime time, FaultPlan& plan);

// One line for logs and the operator: "drop 0.1, partition 0-3|4-7", or "none".
std::string DescribeFaults(const proto::FaultConfig& faults);

}  // namespace murmur::engine
