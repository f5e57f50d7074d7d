// The edge tier of a hierarchical federated run (scenario field
// edge_aggregators E > 0): which clients each edge aggregator serves and the
// options of the edges and of the top server (federated/edge.h).
//
// Node ids: clients 0 .. C-1, edge aggregators C .. C+E-1, the top server
// C+E. With edge_assignment "id", C = nodes and client i belongs to edge
// floor(i E / C), a contiguous block of ids. With "nearest-rsu" (topology
// "vehicles", rsus = E) the last E scenario nodes are the roadside units and
// are the edge aggregators, so C = nodes - E; each vehicle belongs to the RSU
// nearest to it (Euclidean, ties to the lower id), recomputed at the start of
// every top round from the mobility model.
//
// Every edge keeps k_e = round(K |cluster_e| / C) results per round (at
// least 1 for a non-empty cluster), so that the edges together keep about K;
// over-commitment, the deadline, partial work, FedNova, the robust rule and
// the attacks apply at the edges. The top server waits for every edge (an
// edge with nothing answers empty) or, with a deadline D, at most 2 D; it
// applies the scenario's server optimizer to the sample-weighted mean of the
// edges' updates.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/status.h"
#include "federated/edge.h"
#include "federated/server.h"
#include "proto/scenario.pb.h"
#include "sim/device.h"
#include "sim/placement.h"
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

// The placement of clients 0 .. C-1, edges C .. C+E-1 and the top server C+E
// (C = edge_of.size()) on `ranks`: clients in id blocks, the server on the
// last rank, and each edge on the rank of the middle one of its clients, so
// that an edge's clients' tasks and results stay on its rank and only its
// aggregate goes to the top.
Placement PlaceEdgeClusters(std::span<const std::uint32_t> edge_of, NodeId edges, int ranks, int rank);

// k_e = round(K size / clients), at least 1 when size > 0.
std::size_t EdgeClientsPerRound(std::size_t k, std::size_t size, NodeId clients);

// The top server of E edges, from the options a flat server would have.
federated::ServerOptions TopServerOptions(federated::ServerOptions flat, NodeId edges);

// An edge serving `members` (node ids) from the flat server's options;
// `parent` is the top's node id.
federated::EdgeOptions EdgeOptionsFor(const federated::ServerOptions& flat, NodeId parent,
                                      std::vector<NodeId> members, NodeId clients);

}  // namespace murmur::sim
