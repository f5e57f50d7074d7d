// ValidateJobSpec: the one check of a JobSpec (proto/job_spec.proto), for the
// simulator and for murmurd alike. Every error is an InvalidArgument that
// names the field ("spec field 'lr' must be a positive number") and its limit.
// What only one host can run is refused on the other with the reason: the
// simulator alone has the vehicles topology, hierarchical (edge) aggregation,
// simulated gossip attackers and robust gossip mixing; a daemon refuses PowerSGD
// (its low-rank state is not checkpointed). What the host adds around the
// spec is its own to check: the simulated world (sim/scenario.h) and the fleet
// of a job (node/job/job.h).
//
// Thread-safety: a pure function.
#pragma once

#include "core/status.h"
#include "proto/job_spec.pb.h"

namespace murmur::engine {

enum class Host { kSimulator, kDaemon };

Status ValidateJobSpec(const proto::JobSpec& spec, Host host);

// The largest `nodes` each kind of spec takes.
inline constexpr std::uint32_t kMaxGossipNodes = 10'000'000;
inline constexpr std::uint32_t kMaxFederatedClients = 1'000'000;

}  // namespace murmur::engine
