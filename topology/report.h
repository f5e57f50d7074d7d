// TopologyReport: the figures of one topology, as `murmur topology` prints
// them and murmur.topology (Python) returns them: size, degrees,
// connectivity, diameter, the spectral gap of round 0's mixing matrix and,
// for a time-varying schedule, the contraction of the product over a number
// of rounds. CheckTopologySpec is the check of a TopologySpec's parameters
// both front ends run before MakeSchedule.
//
// Thread-safety: pure functions (DescribeSchedule reads the schedule's
// matrices, which a Schedule builds lazily: one caller at a time).
#pragma once

#include <cstdint>

#include "core/status.h"
#include "topology/analysis.h"
#include "topology/factory.h"
#include "topology/spectral.h"

namespace murmur::topology {

struct TopologyReport {
  NodeId nodes = 0;
  std::size_t edges = 0;  // edges, or arcs when directed (round 0)
  bool directed = false;
  DegreeStats degree;  // round 0
  bool connected = false;
  DiameterInfo diameter;
  SpectralInfo spectral;  // of round 0's mixing matrix
  double spectral_seconds = 0;
  std::uint64_t period = 1;  // the schedule's: 1 static, p periodic, 0 random each round
  // Time-varying schedules (period != 1): the contraction of the product of
  // rounds 0 .. rounds - 1, and its per-round rate contraction^(1/rounds).
  std::uint64_t rounds = 0;
  SpectralInfo contraction;
  double per_round = 0;
  double contraction_seconds = 0;
};

// InvalidArgument, naming the parameter, for a kind MakeSchedule does not
// know, nodes 0 (but for a file), a file kind without a file, prob or beta
// outside [0, 1], a negative radius, or weights given to a kind whose rounds
// fix them (one-peer-exponential, random-matching).
Status CheckTopologySpec(const TopologySpec& spec);

// The figures of `schedule`. `rounds` is the product's length for a
// time-varying schedule, 0 for its default (its period, or ceil(log2 n) when
// it has none); InvalidArgument when it is over 4096.
Result<TopologyReport> DescribeSchedule(Schedule& schedule, std::uint64_t rounds = 0);

}  // namespace murmur::topology
