// CollectiveSchedule: one node's part in an all-reduce of a vector of `size`
// values among n nodes, step by step. The node at position i (0 .. n - 1 of
// its ring or group) takes the steps in order; at each it first sends a range
// of its running vector to one position (if any), then waits for a range
// from one position (if any) and adds it in (reduce) or overwrites with it
// (gather). A message carries the step it belongs to, and every position
// numbers the steps alike, so the sender's step is the receiver's.
//
// Two schedules:
//
// kRing, the bandwidth-optimal ring (Patarasuk and Yuan 2009): 2 (n - 1)
// steps, position i sends to i + 1 and receives from i - 1 (mod n) at each.
// The vector is cut into n segments, segment k = [floor(k N / n),
// floor((k + 1) N / n)).
//   steps s = 0 .. n-2 (reduce-scatter): send segment (i - s) mod n; add
//     segment (i - s - 1) mod n. Afterwards i holds the whole sum of segment
//     (i + 1) mod n.
//   steps s = n-1 .. 2n-3 (all-gather, s' = s - (n - 1)): send segment
//     (i + 1 - s') mod n; overwrite segment (i - s') mod n.
// Each node sends 2 N - |seg(i+1)| - |seg(i+2)| values, 2 (n - 1) / n of the
// vector when n divides N, in 2 (n - 1) steps one after the other.
//
// kHalvingDoubling, recursive halving then doubling (Rabenseifner's
// all-reduce; Thakur, Rabenseifner and Gropp 2005): the same bytes as the
// ring when n is a power of two, in 2 log2 n steps, so for latency-bound
// groups (small models, long round trips). Let p be the largest power of two
// <= n, r = n - p and L = log2 p. Positions i < 2 r pair up: the even one
// folds into the odd one and sits out; the p others take ranks k (odd
// i < 2 r: k = i / 2; i >= 2 r: k = i - r). The vector is cut into p
// segments as above. With f = 1 when r > 0 (else 0), the steps are:
//   step 0 (f = 1 only): each even i < 2 r sends the whole vector to i + 1,
//     which adds it.
//   steps f + j, j = 0 .. L-1 (reduce-scatter by recursive halving): with
//     d = p / 2^(j+1), rank k and rank k XOR d share a range of segments
//     [lo, hi); the one with bit d clear keeps the lower half and sends the
//     upper, the other the reverse; each adds the half it keeps. Afterwards
//     rank k holds the whole sum of segment k.
//   steps f + L + j, j = 0 .. L-1 (all-gather by recursive doubling): with
//     d = 2^j, rank k sends its block of d segments [k - k mod d, + d) to rank
//     k XOR d and overwrites the partner's block with what it receives.
//   step 2 L + 1 (f = 1 only): each odd i < 2 r sends the whole vector back
//     to i - 1, which overwrites its own with it.
// A ranked node sends and receives 2 (N - |seg k|) values, 2 (p - 1) / p of
// the vector when p divides N; the pairs of positions below 2 r move N more
// each way.
//
// Both give every node the same sum bit for bit: each segment is summed at
// one node, in an order fixed by the positions, and copied to the others.
//
// Thread-safety: a value; const methods are safe to share.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>

#include "core/env.h"
#include "core/status.h"

namespace murmur::gossip {

enum class Collective { kRing, kHalvingDoubling };

// "ring" or "halving-doubling".
Result<Collective> ParseCollective(const std::string& name);
const char* CollectiveName(Collective c);

// A range [begin, end) of the vector's values.
struct ValueRange {
  std::size_t begin = 0, end = 0;
  std::size_t size() const { return end - begin; }
};

struct CollectiveStep {
  static constexpr NodeId kNobody = std::numeric_limits<NodeId>::max();
  NodeId send_to = kNobody;  // a position, or kNobody
  ValueRange send;
  NodeId recv_from = kNobody;  // a position, or kNobody
  ValueRange recv;
  bool overwrite = false;  // gather: overwrite the range rather than add to it
};

// The segment [begin, end) of segment k of n over `size` values.
std::pair<std::size_t, std::size_t> RingSegment(std::size_t size, std::size_t n, std::size_t k);

class CollectiveSchedule {
 public:
  CollectiveSchedule() : CollectiveSchedule(Collective::kRing, 1, 0, 0) {}  // one node: no steps
  // REQUIRES: n >= 1, position < n.
  CollectiveSchedule(Collective kind, NodeId n, NodeId position, std::size_t size);

  // Steps of the whole operation (the same at every position).
  std::size_t steps() const { return steps_; }
  CollectiveStep At(std::size_t step) const;

  // The step that ends the reduce-scatter (a hierarchical mix between groups
  // runs before it), and the range this node then holds the whole sum of
  // (empty for a position that folded and sits out).
  std::size_t gather_step() const { return gather_step_; }
  ValueRange owned() const { return owned_; }

  Collective kind() const { return kind_; }
  NodeId n() const { return n_; }
  NodeId position() const { return position_; }

 private:
  // Halving-doubling: the position of rank k, and the values of segments [lo, hi).
  NodeId PositionOfRank(NodeId k) const { return k < r_ ? 2 * k + 1 : k + r_; }
  ValueRange Segments(std::size_t lo, std::size_t hi) const;

  Collective kind_;
  NodeId n_, position_;
  std::size_t size_;
  std::size_t steps_ = 0, gather_step_ = 0;
  ValueRange owned_;
  // Halving-doubling: p, r, L, the fold step's width f, and this node's rank
  // (kNobody for a position that folds).
  NodeId p_ = 1, r_ = 0, rank_ = CollectiveStep::kNobody;
  std::size_t levels_ = 0, f_ = 0;
};

}  // namespace murmur::gossip
