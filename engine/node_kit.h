// What a node of a job needs before its algorithm, built here for both hosts
// from the job's plan (engine/plan.h), so that a daemon's node and its
// simulated twin start alike: the initial model, the learner with its batch
// stream, and (a daemon, which builds one node) the peers it exchanges with.
//
// Thread-safety: pure functions; the results belong to the caller.
#pragma once

#include <memory>
#include <span>
#include <vector>

#include "core/env.h"
#include "core/param_vector.h"
#include "core/status.h"
#include "engine/plan.h"
#include "engine/topology.h"
#include "ml/dataset.h"
#include "ml/ml_learner.h"
#include "ml/model.h"

namespace murmur::engine {

// x0, every node's starting model: `model`'s parameters drawn from
// Rng(seed, 0, kInit).
ParamVector InitialModel(const JobPlan& plan, const ml::Model& model);

// Node `index`'s learner (ml::MlLearner) over `samples` of `train`, with the
// plan's optimizer and schedule and its batches from Rng(seed, index, kBatch).
// `model` and `train` outlive the learner.
std::unique_ptr<ml::MlLearner> MakeLearner(const JobPlan& plan, const ml::Model& model,
                                           const ml::Dataset& train, std::span<const ml::SampleIndex> samples,
                                           NodeId index);

// A gossip node's place in the job (a daemon builds one node):
struct NodePeers {
  GraphTopology topology;  // empty for gossip learning on complete (its peers are everyone)
  // Every node `self` exchanges with in some round (a daemon keeps sessions
  // to these): the topology's neighbours; for a hierarchical or
  // halving-doubling all-reduce, the partners of its schedule and its
  // counterparts (AllReducePeers); for gossip learning on complete, everyone.
  std::vector<NodeId> neighbours;
  // Gossip learning: the peers it draws from, as the simulator's node does:
  // everyone on complete, else its out-neighbours (W_ji != 0).
  std::vector<NodeId> candidates;
};
// REQUIRES: a gossip plan. InvalidArgument names the field.
Result<NodePeers> PeersOf(const JobPlan& plan, NodeId self);

}  // namespace murmur::engine
