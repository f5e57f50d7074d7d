#include "node/job/job.h"

#include <cmath>

#include "engine/algorithms.h"

namespace murmur::node {

NodeId DaemonsOf(const proto::JobConfig& job) {
  const NodeId nodes = job.spec().nodes();
  return engine::IsFederatedAlgorithm(job.spec().algorithm()) ? nodes + 1 : nodes;
}

Result<PlannedJob> PlanJobConfig(const proto::JobConfig& j, NodeId self) {
  auto bad = [](const std::string& field, const std::string& why) {
    return Status::InvalidArgument("job field '" + field + "' " + why);
  };
  if (j.job_id().empty() || j.job_id().size() > 64 || j.job_id()[0] == '.' ||
      j.job_id().find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.") !=
          std::string::npos)
    return bad("job_id",
               "'" + j.job_id() +
                   "' must be 1-64 characters of letters, digits, '-', '_', '.', not starting with '.'");
  // A 0.1 job sent as binary by an older murmur arrives as unknown fields only.
  if (!j.GetReflection()->GetUnknownFields(j).empty())
    return Status::InvalidArgument(
        "job: fields this murmurd does not know (a job from an older or newer murmur? murmur 0.1 jobs are "
        "converted by `murmur job submit` of this version)");
  MURMUR_ASSIGN_OR_RETURN(engine::JobPlan plan, engine::PlanJob(j.spec(), engine::Host::kDaemon));
  const bool federated = plan.federated();
  if (j.checkpoint_every() < 1) return bad("checkpoint_every", "must be at least 1");
  if (federated) {
    if (j.aggregator() > j.spec().nodes())
      return bad("aggregator", std::to_string(j.aggregator()) +
                                   " is not a daemon of the job (ids 0 .. spec.nodes = " +
                                   std::to_string(j.spec().nodes()) + ")");
    if (!(j.join_timeout() > 0 && j.join_timeout() <= 86400))
      return bad("join_timeout", "must be in (0, 86400] seconds");
  }
  const NodeId daemons = DaemonsOf(j);
  if (self >= daemons)
    return Status::InvalidArgument("node_id " + std::to_string(self) +
                                   " is not a daemon of the job (ids 0 .. " + std::to_string(daemons - 1) +
                                   ")");
  return PlannedJob(j, std::move(plan));
}

Status ValidateJobConfig(const proto::JobConfig& job, NodeId self) {
  return PlanJobConfig(job, self).status();
}

}  // namespace murmur::node
