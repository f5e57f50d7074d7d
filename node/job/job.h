// Job: one job inside a daemon, gossip (node/job/gossip_job.h) or federated. The
// daemon (node/daemon.h) creates it with MakeJob, points the AsioEnv's sink at
// it, starts it, and asks it to drain or abandon on a stop; the job tells the
// daemon through `on_end` when it has ended (completed, drained, abandoned).
//
// Every job runs on a JobEnv (node/job/job_env.h) over the daemon's AsioEnv, so
// that its random streams follow its own seed and a halted job stays silent.
//
// Thread-safety: everything on the daemon's io thread, except the accessors
// marked as readable from any thread.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/env.h"
#include "core/status.h"
#include "crypto/identity.h"
#include "engine/plan.h"
#include "proto/node.pb.h"

namespace murmur::node {

class Job {
 public:
  enum class End { kCompleted, kDrained, kAbandoned };
  using OnEnd = std::function<void(End)>;

  virtual ~Job() = default;

  // Where the daemon's AsioEnv delivers messages while the job runs.
  virtual MessageSink* sink() = 0;
  // Peers this node exchanges messages with in this job.
  virtual std::vector<NodeId> neighbours() const = 0;
  virtual void Start() = 0;
  // Ends the job after its current round, checkpointed.
  virtual void Drain() = 0;
  // Ends the job now, with a checkpoint of the last completed round.
  virtual void Abandon() = 0;

  virtual const proto::JobConfig& config() const = 0;
  // Readable from any thread:
  virtual bool ended() const = 0;
  virtual std::uint64_t rounds_done() const = 0;
  virtual double accuracy() const = 0;  // -1 before the first evaluation
  virtual double loss() const = 0;      // NaN before the first round
  virtual std::uint64_t checkpoints() const = 0;
  virtual std::vector<float> params() const = 0;  // the model after rounds_done()
  // Gossip jobs: rounds mixed a second time (a bug if ever > 0), and rounds
  // skipped by catching up with a neighbour that was ahead.
  virtual std::uint64_t rounds_mixed_twice() const { return 0; }
  virtual std::uint64_t rounds_skipped() const { return 0; }
  // gossip-learning jobs: how often each node id was drawn as a peer; else empty.
  virtual std::vector<std::uint64_t> peer_draws() const { return {}; }
  // "node" in a gossip job; "aggregator" or "client" in a federated one.
  virtual std::string role() const = 0;
  // DP federated jobs, on the aggregator: the epsilon spent so far (at the
  // job's dp_delta), including before a resume, updated before rounds_done();
  // else 0.
  virtual double epsilon() const { return 0; }

  // The daemon's membership view changed (a peer died or came back).
  virtual void PeersChanged() {}
  // The last thing that went wrong in a job that carries on (a SecAgg+ round
  // that aborted, a privacy budget that ended the job early); empty when none.
  // Readable from any thread.
  virtual std::string warning() const { return {}; }
  // The daemons the current round waits for (gossip: in-neighbours whose
  // model has not come), ascending; empty when it waits for none.
  virtual std::vector<NodeId> waiting_for() const { return {}; }
};

// The daemon's keys as a job sees them (federated SecAgg+ signs and checks
// the clients' key advertisements with them). `identity` (may be null: no
// SecAgg+) must outlive the job; `peer_key` gives the Ed25519 key bound to
// a peer's node id: the certificate it presented on its current session,
// else the one membership verified its statements with (nullopt: none).
struct JobKeys {
  const crypto::Identity* identity = nullptr;
  std::function<std::optional<crypto::SignPublicKey>(NodeId)> peer_key;
};

// The daemons of a job: its gossip nodes, or its clients and the aggregator.
NodeId DaemonsOf(const proto::JobConfig& job);

// A job checked for one daemon (PlanJobConfig): its config and the plan of
// its spec. A daemon plans a job once, when it is submitted (or read at
// start), and builds it from the plan (node/job/factory.h).
class PlannedJob {
 public:
  const proto::JobConfig& config() const { return config_; }
  const engine::JobPlan& plan() const { return plan_; }

 private:
  friend Result<PlannedJob> PlanJobConfig(const proto::JobConfig& job, NodeId self);
  PlannedJob(proto::JobConfig config, engine::JobPlan plan)
      : config_(std::move(config)), plan_(std::move(plan)) {}

  proto::JobConfig config_;
  engine::JobPlan plan_;
};

// Checks a job for node `self`: the fields a fleet adds (job_id, aggregator,
// checkpoint_every, join_timeout, that `self` is one of the job's daemons) and
// the spec, planned by the one reading murmur sim runs too (engine::PlanJob
// for the daemon host). InvalidArgument names the field.
Result<PlannedJob> PlanJobConfig(const proto::JobConfig& job, NodeId self);
// PlanJobConfig's Status, for a caller that only checks.
Status ValidateJobConfig(const proto::JobConfig& job, NodeId self);

}  // namespace murmur::node
