// MakeJob: the job a planned JobConfig names (PlanJobConfig, node/job/job.h),
// gossip (node/job/gossip_job.h) or federated (node/job/federated_job.h).
//
// Thread-safety: call on the daemon's io thread.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "core/env.h"
#include "core/status.h"
#include "node/job/job.h"
#include "node/job/job_data.h"
#include "proto/node.pb.h"

namespace murmur::node {

// `env` (the daemon's AsioEnv) must outlive the job; `checkpoint_path` is
// read for a resume and written as the job goes. `peer_alive` (may be empty)
// is the membership's view: a gossip round does not wait for a neighbour it
// calls dead, and a federated aggregator does not select a client it calls
// dead. `local` is the daemon's local data (node/job/job_data.h). `keys`: see
// JobKeys (a federated job with secure_aggregation needs both).
Result<std::unique_ptr<Job>> MakeJob(const PlannedJob& job, Env& env, std::string checkpoint_path,
                                     Job::OnEnd on_end, std::function<bool(NodeId)> peer_alive = {},
                                     const LocalData& local = {}, JobKeys keys = {});

}  // namespace murmur::node
