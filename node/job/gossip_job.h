// GossipJob: one gossip job inside a daemon. It builds what the job's spec
// names through the engine, exactly as the simulator builds it from the same
// spec (model and initial parameters, this node's share of the data, the
// topology, the learner, the gossip node: engine/gossip_builder.h), and runs
// the node on a JobEnv over the daemon's AsioEnv, writing a checkpoint every
// `checkpoint_every` rounds.
//
// Resume: when the checkpoint file holds a model of the right size, the job
// starts from it after round r and runs rounds r+1 .. rounds; its messages
// carry the real round numbers, so a single restarted daemon rejoins peers
// that went on without it (see gossip::DecentralizedSgdOptions::first_round).
//
// Stop: Drain() lets the current round finish and then halts the job (a
// checkpoint of that round is written); Abandon() halts it at once with a
// checkpoint of the last completed round. Either way `on_end` runs once, on
// the io thread, when the job ends, also when it runs to completion.
//
// Thread-safety: everything on the daemon's io thread, except the atomics and
// params(), which may be read from any thread.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/env.h"
#include "core/status.h"
#include "node/job/job.h"
#include "node/job/job_data.h"
#include "proto/node.pb.h"

namespace murmur::node {

class GossipJobImpl;

class GossipJob final : public Job {
 public:
  // `peer_alive` and `local`: see MakeJob (node/job/job.h).
  static Result<std::unique_ptr<Job>> Create(const PlannedJob& job, Env& env, std::string checkpoint_path,
                                             OnEnd on_end, std::function<bool(NodeId)> peer_alive = {},
                                             const LocalData& local = {});
  ~GossipJob() override;

  MessageSink* sink() override;
  std::vector<NodeId> neighbours() const override;
  void Start() override;
  void Drain() override;
  void Abandon() override;

  const proto::JobConfig& config() const override;
  bool ended() const override;
  std::uint64_t rounds_done() const override;
  double accuracy() const override;
  double loss() const override;
  std::uint64_t checkpoints() const override;
  std::vector<float> params() const override;
  std::uint64_t rounds_mixed_twice() const override;
  std::uint64_t rounds_skipped() const override;
  std::vector<NodeId> waiting_for() const override;
  std::vector<std::uint64_t> peer_draws() const override;
  void PeersChanged() override;
  std::string role() const override { return "node"; }

 private:
  explicit GossipJob(std::unique_ptr<GossipJobImpl> impl);
  std::unique_ptr<GossipJobImpl> impl_;
};

}  // namespace murmur::node
