// Job data: the samples one daemon of a job trains and evaluates on
// (docs/daemon.md "Local data").
//
// Without local data (NodeConfig `data` empty) a node trains on its share of
// the job's `dataset` under the job's `partition` (iid, dirichlet:ALPHA,
// shards:K, quantity:BETA), the share murmur sim gives node `index` of
// `num_nodes` with the job's seed: for a gossip job index = node id of
// job.nodes, for a federated client its client index of job.nodes - 1.
//
// With local data, `data` replaces the job's dataset for this daemon:
//
//   fashion-mnist:PARTITION:part=I/N  node I (0 .. N-1) of N under PARTITION
//                                      with the job's seed: exactly the samples
//                                      `murmur sim --nodes N --partition
//                                      PARTITION --seed SEED` gives node I
//   DIR                                a directory of Fashion-MNIST IDX files,
//                                      its whole training set
//   FILE.csv                           csv:FILE.csv (below)
//   csv:TRAIN[:TEST], fashion-mnist,   a dataset spec (ml/dataset_spec.h), its
//   synthetic:...                      whole training set
//
// Fashion-MNIST files come from NodeConfig `dataset_dir`, or the job's
// dataset_dir when that is empty. Every daemon of a job must end up with the
// same feature dimension and classes (the model is built from them).
//
// Memory: only the node's own training rows are kept (ml::LoadDatasetShard
// reads the labels, computes the partition and streams the image rows it
// needs), plus the test set for evaluation; a federated aggregator keeps no
// training rows at all.
//
// Thread-safety: free functions without shared state.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "ml/dataset.h"
#include "ml/model.h"
#include "proto/node.pb.h"

namespace murmur::node {

// NodeConfig's local-data fields.
struct LocalData {
  std::string data;         // empty: the job's dataset and partition
  std::string dataset_dir;  // empty: the job's dataset_dir
  // Where a TorchScript model's relative path is looked up: the daemon's
  // data_dir (docs/torchscript.md, "murmurd"). Empty: the working directory.
  std::string model_dir;
  // The daemon's artifact store (node/artifacts/store.h): a TorchScript
  // model whose model_blake2b names a file there is read from it first.
  std::string artifact_dir;
};

LocalData LocalDataOf(const proto::NodeConfig& config);

// Checks `data`'s syntax (not the files): InvalidArgument names what is wrong.
Status CheckLocalData(const std::string& data);

// A node's data and the job's model built on it.
struct JobData {
  ml::TrainTest data;                    // train: this node's samples only
  std::vector<ml::SampleIndex> samples;  // 0 .. train.num_samples - 1: the learner's share
  std::unique_ptr<ml::Model> model;
};

// Loads node `index` of `num_nodes`'s data (no training rows when !train) and
// builds the job's model. Errors name the job or config field.
Result<JobData> LoadJobData(const proto::JobConfig& job, const LocalData& local, std::size_t num_nodes,
                            std::size_t index, bool train = true);

// The most training samples any of `num_nodes` nodes gets under the job's
// dataset and partition (no local data): a public bound every client of a
// SecAgg+ job derives alike. Reads only the labels of Fashion-MNIST.
Result<std::size_t> LargestShard(const proto::JobConfig& job, std::size_t num_nodes);

}  // namespace murmur::node
