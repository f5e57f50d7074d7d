#include "node/job/factory.h"

#include "node/job/federated_job.h"
#include "node/job/gossip_job.h"

namespace murmur::node {

Result<std::unique_ptr<Job>> MakeJob(const PlannedJob& job, Env& env, std::string checkpoint_path,
                                     Job::OnEnd on_end, std::function<bool(NodeId)> peer_alive,
                                     const LocalData& local, JobKeys keys) {
  if (job.plan().federated())
    return FederatedJob::Create(job, env, std::move(checkpoint_path), std::move(on_end),
                                std::move(peer_alive), local, std::move(keys));
  return GossipJob::Create(job, env, std::move(checkpoint_path), std::move(on_end), std::move(peer_alive),
                           local);
}

}  // namespace murmur::node
