#include "engine/node_kit.h"

#include "core/rng.h"
#include "engine/gossip_builder.h"

namespace murmur::engine {

ParamVector InitialModel(const JobPlan& plan, const ml::Model& model) {
  ParamVector x0(model.layout());
  Rng init(plan.spec().seed(), 0, RngPurpose::kInit);
  model.InitParams(x0, init);
  return x0;
}

std::unique_ptr<ml::MlLearner> MakeLearner(const JobPlan& plan, const ml::Model& model,
                                           const ml::Dataset& train, std::span<const ml::SampleIndex> samples,
                                           NodeId index) {
  return std::make_unique<ml::MlLearner>(model, train, samples, plan.learner(),
                                         Rng(plan.spec().seed(), index, RngPurpose::kBatch));
}

Result<NodePeers> PeersOf(const JobPlan& plan, NodeId self) {
  const proto::JobSpec& spec = plan.spec();
  const bool gossip_learning = plan.algorithm() == Algorithm::kGossipLearning;
  NodePeers out;
  if (gossip_learning && spec.topology() == "complete") {  // anyone of the job
    for (NodeId j = 0; j < spec.nodes(); ++j)
      if (j != self) out.neighbours.push_back(j);
  } else {
    MURMUR_ASSIGN_OR_RETURN(out.topology, MakeGraphTopology(spec, spec.nodes()));
    out.neighbours = NeighboursOf(*out.topology.schedule, self);
  }
  if (spec.groups() > 1 || plan.gossip().collective != gossip::Collective::kRing) {
    // Hierarchical all-reduce or halving-doubling: the partners of the
    // group's schedule and the counterparts.
    MURMUR_ASSIGN_OR_RETURN(AllReduceGroup group, AllReduceGroupOf(plan, self));
    out.neighbours = AllReducePeers(group, self, plan.gossip().collective);
  }
  if (gossip_learning) {
    out.candidates = out.neighbours;
    if (out.topology.schedule) {
      const topology::MixingMatrix& w = out.topology.schedule->At(0);
      out.candidates.clear();
      for (NodeId j : out.neighbours)
        if (w.At(j, self) != 0) out.candidates.push_back(j);
    }
  }
  return out;
}

}  // namespace murmur::engine
