// Partitions of one shared Dataset among nodes, IID and non-IID.
//
// A Partition is index lists into the dataset, stored flat (CSR: one index
// array and per-node offsets) so that 100,000 nodes cost two arrays, never a
// copy of the data. Every partitioner assigns every sample to exactly one node
// and is deterministic given its Rng (take it from the stream
// (seed, 0, RngPurpose::kPartition)).
//
//   IID            a random permutation cut into near-equal parts.
//   Dirichlet      per class, node shares ~ Dir(alpha) (Hsu, Qi and Brown 2019;
//                  Li et al., NIID-Bench, ICDE 2022): large alpha approaches
//                  IID, small alpha gives each node few classes.
//   Shards         McMahan et al. 2017 (FedAvg): sort by label, cut into
//                  num_nodes * k shards, deal k shards to each node; optionally
//                  repaired so that each node's shards have k distinct classes.
//   Quantity skew  node sizes ~ Dir(beta) over nodes on an IID permutation
//                  (NIID-Bench's quantity skew).
//
// Thread-safety: a Partition is immutable after construction.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "core/rng.h"
#include "core/status.h"
#include "ml/dataset.h"

namespace murmur::ml {

class Partition {
 public:
  // REQUIRES: offsets non-decreasing from 0 to indices.size().
  Partition(std::vector<SampleIndex> indices, std::vector<std::size_t> offsets);

  std::size_t num_nodes() const { return offsets_.size() - 1; }
  std::span<const SampleIndex> node(std::size_t i) const {
    return {indices_.data() + offsets_[i], offsets_[i + 1] - offsets_[i]};
  }
  std::size_t total_samples() const { return indices_.size(); }

 private:
  std::vector<SampleIndex> indices_;
  std::vector<std::size_t> offsets_;  // num_nodes + 1
};

// REQUIRES: num_nodes > 0.
Partition PartitionIid(std::size_t num_samples, std::size_t num_nodes, Rng& rng);

struct DirichletOptions {
  double alpha = 0.5;            // concentration; > 0
  std::size_t min_per_node = 0;  // redraw until every node has this many samples
  int max_attempts = 1000;
};
Result<Partition> PartitionDirichlet(const Dataset& data, std::size_t num_nodes,
                                     const DirichletOptions& options, Rng& rng);

struct ShardOptions {
  int shards_per_node = 2;       // k
  bool distinct_classes = true;  // swap shards until each node's k shards have distinct classes
};
Result<Partition> PartitionShards(const Dataset& data, std::size_t num_nodes, const ShardOptions& options,
                                  Rng& rng);

struct QuantitySkewOptions {
  double beta = 0.5;             // Dirichlet concentration over nodes; > 0
  std::size_t min_per_node = 1;  // given to every node before the Dirichlet split
};
Result<Partition> PartitionQuantitySkew(std::size_t num_samples, std::size_t num_nodes,
                                        const QuantitySkewOptions& options, Rng& rng);

// Per-node label counts, flat: entry [node * num_classes + c].
std::vector<std::int64_t> LabelHistogram(const Dataset& data, const Partition& partition);

// Mean over non-empty nodes of the total-variation distance between the
// node's label distribution and the whole dataset's: 0 for perfectly IID,
// near 1 - 1/num_classes when each node holds a single class.
double MeanLabelTotalVariation(const Dataset& data, const Partition& partition);

}  // namespace murmur::ml
