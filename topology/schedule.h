// Schedule: the communication graph and mixing matrix of each round.
//
// Gossip algorithms ask a Schedule for round t's matrix; static topologies
// ignore t, periodic ones (one-peer exponential) cycle with period(), and
// random per-round ones (random matching) draw round t's graph from
// Rng(seed, 0, kTopology).Fork(t), so any round can be asked for in any order
// and gives the same answer. Churn removes offline nodes from a round with
// RemoveOffline (topology/mixing_matrix.h).
//
// Implementations: StaticSchedule, OnePeerExponentialSchedule,
// RandomMatchingSchedule; MakeSchedule (topology/factory.h) builds one by name.
//
// Thread-safety: a Schedule may cache the last round it built, so At and
// GraphAt are for one thread at a time; the references they return stay
// valid until the next call on the same schedule (for the schedule's whole
// life when period() == 1).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "topology/graph.h"
#include "topology/mixing_matrix.h"
#include "topology/weights.h"

namespace murmur::topology {

class Schedule {
 public:
  virtual ~Schedule() = default;

  virtual NodeId num_nodes() const = 0;
  // Rounds after which the matrices repeat: 1 for static schedules, p for
  // periodic ones, 0 when every round is drawn afresh.
  virtual std::uint64_t period() const = 0;
  // What the weights guarantee (which sums are 1).
  virtual Stochasticity stochasticity() const = 0;

  // The mixing matrix and the graph of round `round`.
  virtual const MixingMatrix& At(std::uint64_t round) = 0;
  virtual const Graph& GraphAt(std::uint64_t round) = 0;
};

// One graph and one matrix for every round.
class StaticSchedule final : public Schedule {
 public:
  StaticSchedule(Graph graph, MixingMatrix weights, Stochasticity stochasticity);
  NodeId num_nodes() const override { return graph_.num_nodes(); }
  std::uint64_t period() const override { return 1; }
  Stochasticity stochasticity() const override { return stochasticity_; }
  const MixingMatrix& At(std::uint64_t) override { return weights_; }
  const Graph& GraphAt(std::uint64_t) override { return graph_; }

 private:
  Graph graph_;
  MixingMatrix weights_;
  Stochasticity stochasticity_;
};

// One-peer exponential graph (Ying et al. 2021, Sec. 4): in round t node i
// averages with node (i + 2^(t mod tau)) mod n, tau = ceil(log2 n):
// W_ii = W_{i, i+2^k} = 1/2. Each W is doubly stochastic (a lazy shift), and
// for n = 2^tau the product of tau consecutive rounds is exactly 11^T/n.
class OnePeerExponentialSchedule final : public Schedule {
 public:
  explicit OnePeerExponentialSchedule(NodeId n);
  NodeId num_nodes() const override { return n_; }
  std::uint64_t period() const override { return weights_.size(); }
  Stochasticity stochasticity() const override { return Stochasticity::kDoubly; }
  const MixingMatrix& At(std::uint64_t round) override { return weights_[round % weights_.size()]; }
  const Graph& GraphAt(std::uint64_t round) override { return graphs_[round % graphs_.size()]; }

 private:
  NodeId n_;
  std::vector<Graph> graphs_;  // round k: arcs i + 2^k -> i
  std::vector<MixingMatrix> weights_;
};

// A uniformly random perfect matching each round (one node left out when n
// is odd); matched pairs average, W = 1/2 on each pair (Boyd et al. 2006,
// randomized gossip). Symmetric and doubly stochastic.
class RandomMatchingSchedule final : public Schedule {
 public:
  RandomMatchingSchedule(NodeId n, std::uint64_t seed);
  NodeId num_nodes() const override { return n_; }
  std::uint64_t period() const override { return 0; }
  Stochasticity stochasticity() const override { return Stochasticity::kDoubly; }
  const MixingMatrix& At(std::uint64_t round) override;
  const Graph& GraphAt(std::uint64_t round) override;

 private:
  void Build(std::uint64_t round);
  NodeId n_;
  std::uint64_t seed_;
  bool built_ = false;
  std::uint64_t round_ = 0;
  Graph graph_;
  MixingMatrix weights_;
};

}  // namespace murmur::topology
