// The communication topology of a JobSpec: its `topology` text ("ring",
// "regular:4", "small-world:4:0.1", "file:EDGES.txt", ...) and `weights`
// turned into a topology::Schedule, and the gossip::RoundTopology the nodes
// read. Both hosts build it here from the same fields and seed, so a daemon's
// neighbours are exactly its simulated twin's. The simulator's `vehicles`
// (contact graphs of moving cars, sim/run/world.h) is the one kind built
// elsewhere: it needs the simulated world; it takes its weights from
// WeightsFor below.
//
// Push-sum always mixes with column-stochastic weights (its `weights` must be
// `default`); the other algorithms take `weights` on static graphs. The
// time-varying kinds (one-peer-exponential, random-matching, vehicles) fix
// their own weights except vehicles, whose contact graphs take `weights`.
//
// Thread-safety: pure functions; the results belong to the caller (a
// RoundTopology is read from one executor).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/env.h"
#include "core/status.h"
#include "gossip/round_topology.h"
#include "proto/job_spec.pb.h"
#include "topology/factory.h"
#include "topology/schedule.h"

namespace murmur::engine {

// Whether the kind gives each round its own graph (CHOCO's compressed
// differences need one graph for the whole run).
bool IsTimeVarying(const std::string& topology);

// The kind's name: "regular:4" -> "regular".
std::string TopologyKind(const std::string& topology);

// The mixing weights the spec asks for: push-sum's column-stochastic ones,
// or `weights` (`given` false for "default": the kind's own choice).
// InvalidArgument names the field.
Result<topology::WeightOptions> WeightsFor(const proto::JobSpec& spec, bool* given);

// The TopologySpec of a graph kind (not "vehicles") over `nodes` nodes, its
// parameters parsed from the text. InvalidArgument names the field.
Result<topology::TopologySpec> GraphSpecOf(const proto::JobSpec& spec, NodeId nodes);

// `murmur topology KIND` and murmur.topology(KIND) take KIND also as a job's
// topology field writes it ("regular:4", "erdos-renyi:0.3", "edges:0 1;1 2"):
// when spec.kind holds such a text, this parses it (GraphSpecOf's reading)
// and its parameters replace spec's own, and spec.kind becomes the bare
// kind. A listed kind (edges, file) takes its list's node count unless
// `nodes_given`. A kind without ':' is left as it is.
Status ApplyTopologyKindText(topology::TopologySpec& spec, bool nodes_given);

struct GraphTopology {
  std::unique_ptr<topology::Schedule> schedule;
  std::unique_ptr<gossip::RoundTopology> rounds;  // reads `schedule`: keep both
  // "ring (spectral gap 0.0128)": the kind, and for a static graph of at most
  // 4096 nodes its spectral gap (empty unless `describe`).
  std::string description;
};

// Whether the kind is chosen from link costs: link-aware:D or link-aware-ring
// (topology/link_aware.h).
bool IsLinkAware(const std::string& topology);

// Builds the schedule and what the nodes read. `describe` computes the
// spectral gap for the description (an eigenvalue problem; the simulator
// prints it, a daemon does not need it). The link-aware kinds need
// `link_cost`, seconds to send one model from u to v (the simulator's link
// model gives it); their description adds the chosen graph's slowest edge
// and total cost.
Result<GraphTopology> MakeGraphTopology(const proto::JobSpec& spec, NodeId nodes, bool describe = false,
                                        const topology::PairCost& link_cost = {});

// Every node `self` exchanges with in some round (both directions, self
// excluded): over the schedule's period, or everyone when each round is
// drawn afresh. A daemon keeps sessions to these.
std::vector<NodeId> NeighboursOf(topology::Schedule& schedule, NodeId self);

}  // namespace murmur::engine
