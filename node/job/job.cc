#include "node/job/job.h"

#include "node/job/federated_job.h"
#include "node/job/gossip_algorithm.h"
#include "node/job/gossip_job.h"

namespace murmur::node {

Status ValidateJobConfig(const proto::JobConfig& j, NodeId self) {
  if (j.job_id().empty() || j.job_id().size() > 64 ||
      j.job_id().find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.") !=
          std::string::npos)
    return Status::InvalidArgument("job field 'job_id': '" + j.job_id() +
                                   "' must be 1-64 characters of letters, digits, '-', '_', '.'");
  if (j.nodes() < 2) return Status::InvalidArgument("job field 'nodes': at least 2");
  if (self >= j.nodes())
    return Status::InvalidArgument("node_id " + std::to_string(self) + " is not below job.nodes " +
                                   std::to_string(j.nodes()));
  if (IsGossipJob(j.algorithm())) {
    if (j.attack() != "none" || j.attack_fraction() != 0 || j.attackers_size() > 0)
      return Status::InvalidArgument("job field 'attack': simulated attacks run in federated jobs only (" +
                                     j.algorithm() + " is a gossip job)");
    return ValidateGossipJob(j, self);
  }
  if (IsFederatedJob(j.algorithm())) return ValidateFederatedJob(j, self);
  return Status::InvalidArgument("job field 'algorithm': '" + j.algorithm() +
                                 "' (murmurd runs dpsgd, dpsgd-cta, push-sum, dsgt, gossip-learning, fedavg, "
                                 "fedprox, scaffold, fedavgm, fedadam, fedyogi, fedadagrad, fedbuff)");
}

Result<std::unique_ptr<Job>> MakeJob(const proto::JobConfig& job, Env& env, std::string checkpoint_path,
                                     Job::OnEnd on_end, std::function<bool(NodeId)> peer_alive,
                                     const LocalData& local, JobKeys keys) {
  MURMUR_RETURN_IF_ERROR(ValidateJobConfig(job, env.self()));
  if (IsFederatedJob(job.algorithm()))
    return FederatedJob::Create(job, env, std::move(checkpoint_path), std::move(on_end),
                                std::move(peer_alive), local, std::move(keys));
  return GossipJob::Create(job, env, std::move(checkpoint_path), std::move(on_end), std::move(peer_alive),
                           local);
}

}  // namespace murmur::node
