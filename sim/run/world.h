// World: everything a scenario run builds before the first event: data and
// its partition, the model and the initial parameters, device profiles and
// the per-round topology. Split from the runner to keep each file about one
// thing.
//
// Thread-safety: built once, then read-only (RoundTopology is used from the
// event loop only).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "gossip/round_topology.h"
#include "ml/dataset.h"
#include "ml/model.h"
#include "ml/partition.h"
#include "proto/scenario.pb.h"
#include "sim/net/churn.h"
#include "sim/net/device.h"
#include "sim/net/links.h"
#include "sim/ranks/ranks.h"
#include "sim/run/scenario.h"
#include "sim/vehicles/mobility.h"
#include "topology/schedule.h"

namespace murmur::sim {

struct World {
  ml::TrainTest data;
  std::unique_ptr<ml::Partition> partition;
  std::unique_ptr<ml::Model> model;
  ParamVector initial;  // every node starts from this model
  std::vector<DeviceProfile> devices;
  std::shared_ptr<const LinkModel> links;           // scenario field links; null: uniform
  RadioRate radio_rate;                             // vehicles' radio_rate (off when not given)
  std::unique_ptr<topology::Schedule> schedule;     // graph kinds
  std::unique_ptr<Mobility> mobility;               // topology "vehicles"
  std::unique_ptr<gossip::RoundTopology> topology;  // what the nodes read
  std::string topology_description;
  std::vector<ChurnEvent> churn_trace;  // from the scenario's churn_trace file, if any
  // attack_placement attached (sim/adversary/byzantine_placement.h): Byzantine nodes
  // nodes .. nodes + attached_to.size() - 1 joined to these honest nodes. The
  // topology and devices then count them; the partition does not.
  std::vector<NodeId> attached_to;
};

// Builds the world for `s`. Errors name the scenario field at fault. On the
// ranks of a partitioned run (`ranks` not null; every rank calls it) the
// dataset is read once per host (sim/ranks/host_data.h).
Result<std::unique_ptr<World>> BuildWorld(const ScenarioPlan& plan, RankGroup* ranks = nullptr);

// Starts the scenario's churn on `sim`: Markov churn until `horizon` when
// churn_online > 0, and the transitions of the world's churn trace.
void StartScenarioChurn(Simulator& sim, const proto::Scenario& s, const World& world, Nanos horizon,
                        const ChurnCallback& on_change, bool every_node = false);

// round_timeout 0 in the simulator: 4 times the slowest of `nodes` nodes'
// round in the world's device and link model (`flops` the local steps of one
// round), so that only a lost message or an offline neighbour makes a node
// wait it out; at least 50 ms (world.cc says how a round is counted).
Nanos FittedRoundTimeout(const World& w, const proto::Scenario& s, NodeId nodes, double flops);

}  // namespace murmur::sim
