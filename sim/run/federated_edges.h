// The edge tier of a hierarchical federated run (scenario field
// edge_aggregators E > 0): which clients each edge aggregator serves; the
// edges and the top server themselves are built by the engine
// (engine/federated_builder.h, MakeEdgeAggregator and MakeTopServer).
//
// Node ids: clients 0 .. C-1, edge aggregators C .. C+E-1, the top server
// C+E. With edge_assignment "id", C = nodes and client i belongs to edge
// floor(i E / C), a contiguous block of ids. With "nearest-rsu" (topology
// "vehicles", rsus = E) the last E scenario nodes are the roadside units and
// are the edge aggregators, so C = nodes - E; each vehicle belongs to the RSU
// nearest to it (Euclidean, ties to the lower id), recomputed at the start of
// every top round from the mobility model.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/status.h"
#include "ml/partition.h"
#include "proto/scenario.pb.h"
#include "sim/net/device.h"
#include "sim/ranks/placement.h"
#include "sim/vehicles/mobility.h"

namespace murmur::sim {

// edge_of[i] for clients 0 .. clients-1 by id: floor(i edges / clients).
std::vector<std::uint32_t> EdgesById(NodeId clients, NodeId edges);

// edge_of[i]: the RSU (nodes clients .. clients+edges-1 of `mobility`) nearest to vehicle i now.
std::vector<std::uint32_t> NearestRsu(const Mobility& mobility, NodeId clients, NodeId edges);

// What a client round at an RSU costs, for contact-aware clusters.
struct ClientRoundCost {
  double model_bits = 0;        // the model down, the update up
  double flops_per_sample = 0;  // of one training pass over a sample
  double local_epochs = 1;
  RadioRate radio;  // the link's rate when on(), else the devices'
};

// Contact-aware clusters: staying[i] when vehicle i's contact with its RSU
// (edge_of[i]) is predicted (Mobility::PredictedContact) to outlast a
// client round there: the model down and the update up at the link's rate
// (the radio's at today's distance, or the slower device's) and
// local_epochs passes over its samples[i] at its device's speed.
std::vector<std::uint8_t> StayingInRange(const Mobility& mobility, std::span<const std::uint32_t> edge_of,
                                         const std::vector<DeviceProfile>& devices,
                                         std::span<const double> samples, const ClientRoundCost& cost);

// The bound on a result's weight when the spec gives none: the largest of
// the first `clients` shares of `partition` (at least 1), or with edge
// aggregators (whose results weigh their clients' sum) the whole partition.
double AutoMaxWeight(const ml::Partition& partition, NodeId clients, bool edges);

// The placement of clients 0 .. C-1, edges C .. C+E-1 and the top server C+E
// (C = edge_of.size()) on `ranks`: clients in id blocks, the server on the
// last rank, and each edge on the rank of the middle one of its clients, so
// that an edge's clients' tasks and results stay on its rank and only its
// aggregate goes to the top.
Placement PlaceEdgeClusters(std::span<const std::uint32_t> edge_of, NodeId edges, int ranks, int rank);

}  // namespace murmur::sim
