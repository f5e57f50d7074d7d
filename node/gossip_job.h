// GossipJob: one gossip job inside a daemon. It builds what the job config
// names, exactly as the simulator derives it from the same seed (model and
// initial parameters, this node's IID shard, the topology, the codec), and
// runs gossip::DecentralizedSgdNode on a JobEnv over the daemon's AsioEnv,
// writing a checkpoint every `checkpoint_every` rounds.
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
#include "gossip/observer.h"
#include "proto/node.pb.h"

namespace murmur::node {

// Checks a job for node `self`: algorithm, partition and the numeric fields.
// `dialable` says whether this node knows an address for a peer (the node
// with the smaller id dials, so every topology neighbour above `self` needs one).
Status ValidateJobConfig(const proto::JobConfig& job, NodeId self);

class GossipJobImpl;

class GossipJob {
 public:
  enum class End { kCompleted, kDrained, kAbandoned };

  // `env` (the daemon's AsioEnv) must outlive the job. `checkpoint_path` is
  // read for a resume and written as the job goes.
  static Result<std::unique_ptr<GossipJob>> Create(const proto::JobConfig& job, Env& env,
                                                   std::string checkpoint_path,
                                                   std::function<void(End)> on_end);
  ~GossipJob();

  // The message sink of the job's node (AsioEnv::SetSink).
  MessageSink* sink();
  // Neighbours of this node in the job's topology (in and out).
  std::vector<NodeId> neighbours() const;
  void Start();
  void Drain();
  void Abandon();

  const proto::JobConfig& config() const;
  bool ended() const;
  std::uint64_t start_round() const;
  std::uint64_t rounds_done() const;
  double accuracy() const;  // -1 before the first evaluation
  double loss() const;
  std::uint64_t checkpoints() const;
  std::vector<float> params() const;  // the model after rounds_done()

 private:
  explicit GossipJob(std::unique_ptr<GossipJobImpl> impl);
  std::unique_ptr<GossipJobImpl> impl_;
};

}  // namespace murmur::node
