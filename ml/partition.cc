#include "ml/partition.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

namespace murmur::ml {
namespace {

std::vector<SampleIndex> Permutation(std::size_t n, Rng& rng) {
  std::vector<SampleIndex> p(n);
  std::iota(p.begin(), p.end(), SampleIndex{0});
  rng.Shuffle(std::span<SampleIndex>(p));
  return p;
}

// A draw from the symmetric Dirichlet(alpha) over n outcomes. Tiny alphas can
// underflow every Gamma draw to zero; the limit is then all mass on one outcome.
std::vector<double> Dirichlet(std::size_t n, double alpha, Rng& rng) {
  std::vector<double> p(n);
  double sum = 0;
  for (double& v : p) sum += (v = rng.Gamma(alpha));
  if (sum > 0) {
    for (double& v : p) v /= sum;
  } else {
    p[static_cast<std::size_t>(rng.UniformInt(n))] = 1;
  }
  return p;
}

// Cut points of `count` items in proportions `p`: floor(cumsum(p) * count), last = count.
void AppendCuts(std::size_t count, const std::vector<double>& p, std::vector<std::size_t>& cuts) {
  cuts.clear();
  double cum = 0;
  for (std::size_t j = 0; j + 1 < p.size(); ++j) {
    cum += p[j];
    cuts.push_back(std::min(count, static_cast<std::size_t>(std::floor(cum * static_cast<double>(count)))));
  }
  cuts.push_back(count);
}

Partition FromBuckets(std::vector<std::vector<SampleIndex>>& buckets) {
  std::vector<SampleIndex> indices;
  std::vector<std::size_t> offsets{0};
  for (auto& b : buckets) {
    indices.insert(indices.end(), b.begin(), b.end());
    offsets.push_back(indices.size());
  }
  return Partition(std::move(indices), std::move(offsets));
}

}  // namespace

Partition::Partition(std::vector<SampleIndex> indices, std::vector<std::size_t> offsets)
    : indices_(std::move(indices)), offsets_(std::move(offsets)) {
  MURMUR_CHECK(!offsets_.empty() && offsets_.front() == 0 && offsets_.back() == indices_.size());
  MURMUR_CHECK(std::is_sorted(offsets_.begin(), offsets_.end()));
}

Partition PartitionIid(std::size_t num_samples, std::size_t num_nodes, Rng& rng) {
  MURMUR_CHECK(num_nodes > 0);
  std::vector<SampleIndex> perm = Permutation(num_samples, rng);
  std::vector<std::size_t> offsets(num_nodes + 1);
  for (std::size_t j = 0; j <= num_nodes; ++j) offsets[j] = num_samples * j / num_nodes;
  return Partition(std::move(perm), std::move(offsets));
}

Result<Partition> PartitionDirichlet(const Dataset& data, std::size_t num_nodes, const DirichletOptions& o,
                                     Rng& rng) {
  if (num_nodes == 0) return Status::InvalidArgument("Dirichlet partition over 0 nodes");
  if (!(o.alpha > 0)) return Status::InvalidArgument("Dirichlet alpha " + std::to_string(o.alpha) + " <= 0");
  if (o.min_per_node * num_nodes > static_cast<std::size_t>(data.num_samples))
    return Status::InvalidArgument("Dirichlet partition: " + std::to_string(num_nodes) + " nodes x " +
                                   std::to_string(o.min_per_node) + " minimum samples exceeds " +
                                   std::to_string(data.num_samples) + " samples");
  std::vector<std::vector<SampleIndex>> by_class(static_cast<std::size_t>(data.num_classes));
  for (std::int64_t i = 0; i < data.num_samples; ++i)
    by_class[static_cast<std::size_t>(data.labels[static_cast<std::size_t>(i)])].push_back(
        static_cast<SampleIndex>(i));
  std::vector<std::vector<SampleIndex>> buckets(num_nodes);
  std::vector<std::size_t> cuts;
  for (int attempt = 0; attempt < o.max_attempts; ++attempt) {
    for (auto& b : buckets) b.clear();
    for (auto& members : by_class) {
      rng.Shuffle(std::span<SampleIndex>(members));
      AppendCuts(members.size(), Dirichlet(num_nodes, o.alpha, rng), cuts);
      std::size_t begin = 0;
      for (std::size_t j = 0; j < num_nodes; ++j) {
        buckets[j].insert(buckets[j].end(), members.begin() + static_cast<std::ptrdiff_t>(begin),
                          members.begin() + static_cast<std::ptrdiff_t>(cuts[j]));
        begin = cuts[j];
      }
    }
    bool ok = std::all_of(buckets.begin(), buckets.end(),
                          [&](const auto& b) { return b.size() >= o.min_per_node; });
    if (ok) return FromBuckets(buckets);
  }
  return Status::FailedPrecondition("Dirichlet partition: no draw in " + std::to_string(o.max_attempts) +
                                    " attempts gave every node " + std::to_string(o.min_per_node) +
                                    " samples (raise alpha or lower the minimum)");
}

Result<Partition> PartitionShards(const Dataset& data, std::size_t num_nodes, const ShardOptions& o,
                                  Rng& rng) {
  if (num_nodes == 0 || o.shards_per_node <= 0)
    return Status::InvalidArgument("shard partition needs nodes and shards per node > 0");
  std::size_t k = static_cast<std::size_t>(o.shards_per_node);
  std::size_t num_shards = num_nodes * k;
  std::size_t n = static_cast<std::size_t>(data.num_samples);
  if (num_shards > n)
    return Status::InvalidArgument("shard partition: " + std::to_string(num_shards) + " shards for only " +
                                   std::to_string(n) + " samples");
  // Shuffle first so that the stable sort leaves each class in random order.
  std::vector<SampleIndex> order = Permutation(n, rng);
  std::stable_sort(order.begin(), order.end(),
                   [&](SampleIndex a, SampleIndex b) { return data.labels[a] < data.labels[b]; });
  auto shard_begin = [&](std::size_t s) { return n * s / num_shards; };
  std::vector<int> shard_class(num_shards);
  for (std::size_t s = 0; s < num_shards; ++s)
    shard_class[s] =
        data.labels[order[(shard_begin(s) + shard_begin(s + 1)) / 2]];  // the middle: the majority
  std::vector<std::size_t> deal(num_shards);                            // node j holds deal[j*k .. j*k+k)
  std::iota(deal.begin(), deal.end(), std::size_t{0});
  rng.Shuffle(std::span<std::size_t>(deal));

  if (o.distinct_classes) {
    auto cls = [&](std::size_t slot) { return shard_class[deal[slot]]; };
    // True when node `node` holds class c in a slot other than `except`.
    auto holds = [&](std::size_t node, int c, std::size_t except) {
      for (std::size_t t = node * k; t < node * k + k; ++t)
        if (t != except && cls(t) == c) return true;
      return false;
    };
    for (std::size_t slot = 0; slot < num_shards; ++slot) {
      std::size_t node = slot / k;
      if (!holds(node, cls(slot), slot)) continue;
      // Swap this slot with one of another node so that neither node holds a class twice.
      bool fixed = false;
      std::size_t start = static_cast<std::size_t>(rng.UniformInt(num_shards));
      for (std::size_t step = 0; step < num_shards && !fixed; ++step) {
        std::size_t other = (start + step) % num_shards;
        std::size_t other_node = other / k;
        if (other_node == node) continue;
        if (holds(node, cls(other), slot) || holds(other_node, cls(slot), other)) continue;
        std::swap(deal[slot], deal[other]);
        fixed = true;
      }
      if (!fixed)
        return Status::FailedPrecondition("shard partition: cannot give each of " +
                                          std::to_string(num_nodes) + " nodes " + std::to_string(k) +
                                          " shards of distinct classes (a class has more shards than nodes)");
    }
  }
  std::vector<SampleIndex> indices;
  indices.reserve(n);
  std::vector<std::size_t> offsets{0};
  for (std::size_t j = 0; j < num_nodes; ++j) {
    for (std::size_t t = j * k; t < j * k + k; ++t) {
      std::size_t s = deal[t];
      indices.insert(indices.end(), order.begin() + static_cast<std::ptrdiff_t>(shard_begin(s)),
                     order.begin() + static_cast<std::ptrdiff_t>(shard_begin(s + 1)));
    }
    offsets.push_back(indices.size());
  }
  return Partition(std::move(indices), std::move(offsets));
}

Result<Partition> PartitionQuantitySkew(std::size_t num_samples, std::size_t num_nodes,
                                        const QuantitySkewOptions& o, Rng& rng) {
  if (num_nodes == 0) return Status::InvalidArgument("quantity-skew partition over 0 nodes");
  if (!(o.beta > 0)) return Status::InvalidArgument("quantity-skew beta " + std::to_string(o.beta) + " <= 0");
  if (o.min_per_node * num_nodes > num_samples)
    return Status::InvalidArgument("quantity-skew partition: " + std::to_string(num_nodes) + " nodes x " +
                                   std::to_string(o.min_per_node) + " minimum samples exceeds " +
                                   std::to_string(num_samples) + " samples");
  std::vector<SampleIndex> perm = Permutation(num_samples, rng);
  std::size_t rest = num_samples - o.min_per_node * num_nodes;
  std::vector<std::size_t> cuts;
  AppendCuts(rest, Dirichlet(num_nodes, o.beta, rng), cuts);
  std::vector<std::size_t> offsets{0};
  for (std::size_t j = 0; j < num_nodes; ++j) offsets.push_back(cuts[j] + (j + 1) * o.min_per_node);
  return Partition(std::move(perm), std::move(offsets));
}

std::vector<std::int64_t> LabelHistogram(const Dataset& data, const Partition& partition) {
  std::size_t c = static_cast<std::size_t>(data.num_classes);
  std::vector<std::int64_t> hist(partition.num_nodes() * c, 0);
  for (std::size_t j = 0; j < partition.num_nodes(); ++j)
    for (SampleIndex i : partition.node(j)) ++hist[j * c + static_cast<std::size_t>(data.labels[i])];
  return hist;
}

double MeanLabelTotalVariation(const Dataset& data, const Partition& partition) {
  std::size_t c = static_cast<std::size_t>(data.num_classes);
  std::vector<std::int64_t> global = LabelCounts(data, AllIndices(data));
  std::vector<std::int64_t> hist = LabelHistogram(data, partition);
  double total = 0;
  std::size_t nodes = 0;
  for (std::size_t j = 0; j < partition.num_nodes(); ++j) {
    double size = static_cast<double>(partition.node(j).size());
    if (size == 0) continue;
    double tv = 0;
    for (std::size_t y = 0; y < c; ++y)
      tv += std::abs(static_cast<double>(hist[j * c + y]) / size -
                     static_cast<double>(global[y]) / static_cast<double>(data.num_samples));
    total += tv / 2;
    ++nodes;
  }
  return nodes == 0 ? 0 : total / static_cast<double>(nodes);
}

}  // namespace murmur::ml
