// Dataset specs: the strings that name training data on the command line and
// in scenario files.
//
//   "fashion-mnist"          the IDX files in `data_dir` (Debian: dataset-fashion-mnist)
//   "csv:TRAIN.csv"          label column + features; 20% held out for testing
//   "csv:TRAIN.csv:TEST.csv" explicit test file
//   "npz:FILE.npz"           NumPy arrays x_train, y_train, x_test, y_test (ml/npy.h)
//   "npz:TRAIN.npz:TEST.npz" arrays x and y in each
//   "npy:X:Y:X_TEST:Y_TEST"  four .npy files: training samples and labels, test samples and labels
//   "text:T:FILE"            byte-level text in next-token windows of context T; the
//                            last tenth held out for testing (ml/text.h)
//   "text:T:TRAIN:TEST"      explicit test file
//   "synthetic:blobs"        Gaussian blobs, 20,000 train / 5,000 test (dim 20, 10 classes)
//   "synthetic:teacher"      labels of a random linear teacher, same sizes
//   "synthetic:blobs:N"      the same with N training samples (1 <= N <= 10^8), e.g. for a
//   "synthetic:teacher:N"    population of a million nodes
//
// Partition specs (murmur sim's `partition`; ml/partition.h), over num_nodes
// nodes from the stream (seed, 0, RngPurpose::kPartition):
//
//   "iid"             PartitionIid
//   "dirichlet:ALPHA" PartitionDirichlet, at least min(10, n / num_nodes) samples per node
//   "shards:K"        PartitionShards with K shards per node
//   "quantity:BETA"   PartitionQuantitySkew
//
// LoadDatasetShard loads what one node of a partition needs: the test set and
// its own training samples. For Fashion-MNIST it reads the labels, computes
// the partition, and keeps only the node's image rows (ml/idx.h LoadIdxRows),
// about 1/num_nodes of the 188 MB of training floats.
//
// Thread-safety: free functions without shared state.
#pragma once

#include <cstdint>
#include <string>

#include "core/status.h"
#include "ml/dataset.h"
#include "ml/partition.h"

namespace murmur::ml {

// Loads the train and test sets named by `spec`. InvalidArgument names an
// unknown spec; reader errors name the file. `seed` drives synthetic data and
// the CSV hold-out split.
Result<TrainTest> LoadDatasetSpec(const std::string& spec, const std::string& data_dir, std::uint64_t seed);

// Checks a partition spec's syntax: InvalidArgument names what is wrong.
Status CheckPartitionSpec(const std::string& partition);

// The partition `partition` names of `train` (only its labels, num_samples and
// num_classes are read) over `num_nodes` nodes: what murmur sim gives its nodes.
Result<Partition> PartitionBySpec(const std::string& partition, const Dataset& train, std::size_t num_nodes,
                                  std::uint64_t seed);

// The partition `partition` names of `spec`'s training set over `num_nodes`
// nodes, as LoadDatasetShard computes it; Fashion-MNIST reads only its labels
// file, other specs are loaded whole.
Result<Partition> PartitionOfSpec(const std::string& spec, const std::string& data_dir, std::uint64_t seed,
                                  const std::string& partition, std::size_t num_nodes);

// One node's share of a dataset: node `node` of `num_nodes` under `partition`.
struct ShardSpec {
  std::string partition = "iid";
  std::size_t num_nodes = 1;
  std::size_t node = 0;  // < num_nodes
  // false: no training samples (train keeps its name, dim and classes), for a
  // node that only evaluates, such as a federated aggregator.
  bool train = true;
};

// LoadDatasetSpec's test set and, as train, node `shard.node`'s samples in the
// partition's order: bit for bit Subset(full.train, PartitionBySpec(...).node(
// shard.node)). Fashion-MNIST reads only the rows it keeps; other specs are
// loaded whole and then cut.
Result<TrainTest> LoadDatasetShard(const std::string& spec, const std::string& data_dir, std::uint64_t seed,
                                   const ShardSpec& shard);

// Rows `indices` of `data` as a new dataset (same name, dim and classes).
Dataset Subset(const Dataset& data, std::span<const SampleIndex> indices);

}  // namespace murmur::ml
