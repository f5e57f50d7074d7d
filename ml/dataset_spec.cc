#include "ml/dataset_spec.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>

#include "core/rng.h"
#include "ml/csv.h"
#include "ml/idx.h"
#include "ml/npy.h"
#include "ml/synthetic.h"
#include "ml/text.h"

namespace murmur::ml {

namespace {

struct PartitionKind {
  std::string kind;  // iid, dirichlet, shards, quantity
  double value = 0;
};

Result<PartitionKind> ParsePartition(const std::string& p) {
  if (p == "iid") return PartitionKind{"iid", 0};
  const auto colon = p.find(':');
  const std::string kind = p.substr(0, colon);
  if (kind != "dirichlet" && kind != "shards" && kind != "quantity")
    return Status::InvalidArgument("partition '" + p +
                                   "' is not iid, dirichlet:ALPHA, shards:K or quantity:BETA");
  const std::string text = colon == std::string::npos ? "" : p.substr(colon + 1);
  double v = 0;
  try {
    std::size_t used = 0;
    v = std::stod(text, &used);
    if (used != text.size()) v = std::nan("");
  } catch (const std::exception&) {
    v = std::nan("");
  }
  if (!std::isfinite(v))
    return Status::InvalidArgument("partition '" + p + "': '" + text + "' is not a number");
  if (!(v > 0)) return Status::InvalidArgument("partition '" + p + "': the parameter must be > 0");
  if (kind == "shards" && (v != std::floor(v) || v > 1e6))
    return Status::InvalidArgument("partition '" + p + "': K must be a whole number of shards");
  return PartitionKind{kind, v};
}

}  // namespace

Status CheckPartitionSpec(const std::string& partition) { return ParsePartition(partition).status(); }

Result<Partition> PartitionBySpec(const std::string& partition, const Dataset& train, std::size_t num_nodes,
                                  std::uint64_t seed) {
  MURMUR_ASSIGN_OR_RETURN(PartitionKind p, ParsePartition(partition));
  if (num_nodes == 0) return Status::InvalidArgument("partition over 0 nodes");
  Rng rng(seed, 0, RngPurpose::kPartition);
  const auto n = static_cast<std::size_t>(train.num_samples);
  if (p.kind == "iid") return PartitionIid(n, num_nodes, rng);
  if (p.kind == "dirichlet") {
    DirichletOptions o;
    o.alpha = p.value;
    // Every node gets at least a little data (as FedLab and Flower's partitioners do).
    o.min_per_node = std::min<std::size_t>(10, n / num_nodes);
    return PartitionDirichlet(train, num_nodes, o, rng);
  }
  if (p.kind == "shards") {
    ShardOptions o;
    o.shards_per_node = static_cast<int>(p.value);
    return PartitionShards(train, num_nodes, o, rng);
  }
  QuantitySkewOptions o;
  o.beta = p.value;
  return PartitionQuantitySkew(n, num_nodes, o, rng);
}

namespace {

Status CheckFashionMnistDir(const std::string& data_dir) {
  if (std::filesystem::is_directory(data_dir)) return Status::Ok();
  return Status::NotFound("Fashion-MNIST directory " + data_dir +
                          " not found (install the Debian package dataset-fashion-mnist, or pass "
                          "the directory holding train-images-idx3-ubyte.gz)");
}

}  // namespace

Result<Partition> PartitionOfSpec(const std::string& spec, const std::string& data_dir, std::uint64_t seed,
                                  const std::string& partition, std::size_t num_nodes) {
  if (spec != "fashion-mnist") {
    MURMUR_ASSIGN_OR_RETURN(TrainTest tt, LoadDatasetSpec(spec, data_dir, seed));
    return PartitionBySpec(partition, tt.train, num_nodes, seed);
  }
  MURMUR_RETURN_IF_ERROR(CheckFashionMnistDir(data_dir));
  MURMUR_ASSIGN_OR_RETURN(Dataset y, LoadIdxLabels(FashionMnistFile(data_dir, "train-labels-idx1-ubyte"),
                                                   "fashion-mnist/train", 10));
  return PartitionBySpec(partition, y, num_nodes, seed);
}

Result<TrainTest> LoadDatasetShard(const std::string& spec, const std::string& data_dir, std::uint64_t seed,
                                   const ShardSpec& shard) {
  if (shard.train && shard.node >= shard.num_nodes)
    return Status::InvalidArgument("node " + std::to_string(shard.node) + " of a partition over " +
                                   std::to_string(shard.num_nodes) + " nodes");
  std::vector<SampleIndex> rows;
  if (spec != "fashion-mnist") {
    MURMUR_ASSIGN_OR_RETURN(TrainTest tt, LoadDatasetSpec(spec, data_dir, seed));
    if (shard.train) {
      MURMUR_ASSIGN_OR_RETURN(Partition part,
                              PartitionBySpec(shard.partition, tt.train, shard.num_nodes, seed));
      const auto mine = part.node(shard.node);
      rows.assign(mine.begin(), mine.end());
    }
    tt.train = Subset(tt.train, rows);
    return tt;
  }
  MURMUR_RETURN_IF_ERROR(CheckFashionMnistDir(data_dir));
  const std::string images = FashionMnistFile(data_dir, "train-images-idx3-ubyte");
  const std::string labels = FashionMnistFile(data_dir, "train-labels-idx1-ubyte");
  TrainTest tt;
  if (shard.train) {
    MURMUR_ASSIGN_OR_RETURN(Partition part,
                            PartitionOfSpec(spec, data_dir, seed, shard.partition, shard.num_nodes));
    const auto mine = part.node(shard.node);
    rows.assign(mine.begin(), mine.end());
  }
  MURMUR_ASSIGN_OR_RETURN(tt.train, LoadIdxRows(images, labels, "fashion-mnist/train", 10, rows));
  MURMUR_ASSIGN_OR_RETURN(tt.test, LoadIdxDataset(FashionMnistFile(data_dir, "t10k-images-idx3-ubyte"),
                                                  FashionMnistFile(data_dir, "t10k-labels-idx1-ubyte"),
                                                  "fashion-mnist/test", 10));
  return tt;
}

Dataset Subset(const Dataset& data, std::span<const SampleIndex> indices) {
  Dataset out = data.EmptyLike();
  for (SampleIndex i : indices) out.AppendSample(data, i);
  return out;
}

Result<TrainTest> LoadDatasetSpec(const std::string& spec, const std::string& data_dir, std::uint64_t seed) {
  if (spec == "fashion-mnist") return LoadFashionMnist(data_dir);
  if (spec.rfind("synthetic:", 0) == 0) {
    // synthetic:KIND or synthetic:KIND:N, N training samples (20,000 by default); 5,000 test samples.
    std::string kind = spec.substr(10);
    std::int64_t train = 20000;
    if (auto colon = kind.find(':'); colon != std::string::npos) {
      const std::string n = kind.substr(colon + 1);
      kind = kind.substr(0, colon);
      char* end = nullptr;
      const long long v = std::strtoll(n.c_str(), &end, 10);
      if (n.empty() || *end != '\0' || v < 1 || v > 100'000'000)
        return Status::InvalidArgument("dataset '" + spec + "': the sample count '" + n +
                                       "' is not a whole number in [1, 100000000]");
      train = v;
    }
    auto make = [&](auto options, auto generate) {
      options.seed = seed;
      options.num_samples = train;
      TrainTest tt;
      tt.train = generate(options);
      options.stream = 1;
      options.num_samples = 5000;
      tt.test = generate(options);
      return tt;
    };
    if (kind == "blobs") return make(BlobsOptions{}, MakeGaussianBlobs);
    if (kind == "teacher") return make(TeacherOptions{}, MakeLinearTeacher);
  }
  if (spec.rfind("npz:", 0) == 0) {
    std::string rest = spec.substr(4), test_path;
    if (auto colon = rest.find(':'); colon != std::string::npos) {
      test_path = rest.substr(colon + 1);
      rest = rest.substr(0, colon);
    }
    return LoadNpzDataset(rest, test_path);
  }
  if (spec.rfind("npy:", 0) == 0) {
    std::vector<std::string> paths;
    std::string rest = spec.substr(4);
    for (std::size_t colon; (colon = rest.find(':')) != std::string::npos; rest = rest.substr(colon + 1))
      paths.push_back(rest.substr(0, colon));
    paths.push_back(rest);
    if (paths.size() != 4)
      return Status::InvalidArgument("dataset '" + spec +
                                     "': npy: needs four files, X_TRAIN:Y_TRAIN:X_TEST:Y_TEST");
    return LoadNpyDataset(paths[0], paths[1], paths[2], paths[3]);
  }
  if (spec.rfind("text:", 0) == 0) return LoadTextDataset(spec.substr(5));
  if (spec.rfind("csv:", 0) == 0) {
    std::string rest = spec.substr(4);
    std::string test_path;
    if (auto colon = rest.find(':'); colon != std::string::npos) {
      test_path = rest.substr(colon + 1);
      rest = rest.substr(0, colon);
    }
    MURMUR_ASSIGN_OR_RETURN(Dataset all, ReadCsv(rest));
    TrainTest tt;
    if (!test_path.empty()) {
      CsvOptions o;
      o.num_classes = all.num_classes;
      MURMUR_ASSIGN_OR_RETURN(tt.test, ReadCsv(test_path, o));
      if (tt.test.dim != all.dim) {
        return Status::InvalidArgument(test_path + ": " + std::to_string(tt.test.dim) +
                                       " features, training data has " + std::to_string(all.dim));
      }
      tt.train = std::move(all);
      return tt;
    }
    // Hold out 20% by a seeded permutation.
    std::vector<SampleIndex> order = AllIndices(all);
    Rng rng(seed, 0, RngPurpose::kPartition);
    rng.Shuffle(std::span<SampleIndex>(order));
    std::size_t test_n = std::max<std::size_t>(1, order.size() / 5);
    if (order.size() < 2)
      return Status::InvalidArgument(rest + ": need at least 2 rows to hold out a test set");
    tt.test = Subset(all, std::span(order).first(test_n));
    tt.train = Subset(all, std::span(order).subspan(test_n));
    return tt;
  }
  return Status::InvalidArgument("dataset '" + spec +
                                 "' unknown (expected fashion-mnist, csv:TRAIN[:TEST], npz:FILE[:TEST], "
                                 "npy:X:Y:X_TEST:Y_TEST, text:T:FILE[:TEST], synthetic:blobs[:N] or "
                                 "synthetic:teacher[:N])");
}

}  // namespace murmur::ml
