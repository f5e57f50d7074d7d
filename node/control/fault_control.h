// Fault injection in murmurd (docs/security.md "Fault injection"): turns a
// proto::FaultConfig (the config's `faults`, or `murmur fault set`) into the
// FaultPlan (core/fault_plan.h) that the daemon's FaultyEnv applies to every
// message it sends: membership and jobs alike.
//
// The config's probabilities and delays become one rule for every link; its
// partition (`0-3|4-7`: groups of node ids, no time window) becomes the
// plan's manual partition, active until the faults are replaced or cleared.
// A partition cuts both directions only when every daemon of both groups
// applies it (each daemon drops its own sends), so an operator sends it to
// the whole fleet.
//
// Thread-safety: call on the thread the daemon's envs send from (the io thread).
#pragma once

#include <string>

#include "core/fault_plan.h"
#include "core/status.h"
#include "proto/node.pb.h"

namespace murmur::node {

// Node ids in a partition must be below this (a group's lookup table is this long at most).
inline constexpr NodeId kMaxFaultNodeId = 1 << 16;

// InvalidArgument naming the field and the limit when `faults` is out of range.
Status ValidateFaultConfig(const proto::FaultConfig& faults);
// Replaces everything in `plan` by `faults`; on an error the plan is unchanged.
Status ApplyFaultConfig(const proto::FaultConfig& faults, FaultPlan& plan);
// One line for logs and the operator: "drop 0.1, partition 0-3|4-7", or "none".
std::string DescribeFaults(const proto::FaultConfig& faults);

}  // namespace murmur::node
