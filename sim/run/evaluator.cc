#include "sim/run/evaluator.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

#include "core/reduce.h"
#include "core/sysinfo.h"
#include "ml/ml_learner.h"

namespace murmur::sim {

Evaluator::Evaluator(const ml::Model& model, const ml::Dataset& test, std::size_t eval_nodes,
                     std::size_t eval_samples, std::uint64_t seed, ThreadPool& pool)
    : Evaluator(
          [&model, &test](const ParamVector& params, std::span<const ml::SampleIndex> samples,
                          ThreadPool* p) {
            return model.Evaluate(params, test, samples, *ml::ScratchFor(model).workspace, p);
          },
          model.layout(), true, test, eval_nodes, eval_samples, seed, pool) {}

Evaluator::Evaluator(Measure measure, const Layout& layout, bool parallel, const ml::Dataset& test,
                     std::size_t eval_nodes, std::size_t eval_samples, std::uint64_t seed, ThreadPool& pool)
    : measure_(std::move(measure)),
      parallel_(parallel),
      eval_nodes_(eval_nodes),
      all_(ml::AllIndices(test)),
      pool_(pool) {
  sample_ = all_;
  Rng rng(seed, 0, RngPurpose::kGeneric);
  rng.Shuffle(std::span<ml::SampleIndex>(sample_));
  if (eval_samples > 0 && eval_samples < sample_.size()) sample_.resize(eval_samples);
  std::sort(sample_.begin(), sample_.end());
  average_ = ParamVector(layout);
}

EvalPoint Evaluator::Evaluate(const std::vector<const ParamVector*>& params) {
  std::unique_ptr<RankGroup> one = MakeLocalRanks();
  std::vector<std::size_t> positions(params.size());
  for (std::size_t i = 0; i < positions.size(); ++i) positions[i] = i;
  return Evaluate(params, {}, *one, positions, params.size());
}

namespace {

// An exponent larger than any finite float's: marks a coordinate where some
// model holds an infinity or a NaN.
constexpr std::int64_t kNotFinite = 1 << 20;
// No model has a nonzero value there.
constexpr std::int64_t kAllZero = std::numeric_limits<std::int64_t>::min();

}  // namespace

void Evaluator::Average(const std::vector<const ParamVector*>& params, RankGroup& ranks, std::size_t n) {
  // x_bar = (1/n) sum_i x_i, summed so that no order of the models changes a
  // bit: a double sum would depend on the order, which follows the placement
  // of the models on ranks. Per coordinate k, the largest exponent e_k of
  // |x_ik| over all models (a maximum: any order gives it) sets a grid of
  // 2^(e_k + 1 + L - 62), L = bit_width(n); each x_ik, truncated to the grid,
  // is an integer below 2^(62 - L) in magnitude, and n of them sum exactly in
  // 64 bits, in any order and across ranks. The truncation loses less than
  // one grid step per model, so x_bar is off by less than 2^(e_k + 1 + L - 62):
  // about 2^-42 of the largest |x_ik| for a million models, far below a
  // float's 2^-24.
  const std::size_t d = average_.size();
  const std::size_t local = params.size();
  const int shift = 62 - std::bit_width(n);
  exponent_.assign(d, kAllZero);
  pool_.ParallelFor(d, 4096, [&](std::size_t b, std::size_t e) {
    for (std::size_t k = b; k < e; ++k) {
      float m = 0;
      bool finite = true;
      for (std::size_t i = 0; i < local; ++i) {
        const float v = std::fabs((*params[i])[k]);
        finite = finite && std::isfinite(v);
        m = std::max(m, v);
      }
      if (!finite) {
        exponent_[k] = kNotFinite;
      } else if (m > 0) {
        exponent_[k] = std::ilogb(m);
      }
    }
  });
  if (ranks.size() > 1) ranks.AllReduceMax(exponent_);
  sum_.assign(d, 0);
  pool_.ParallelFor(d, 4096, [&](std::size_t b, std::size_t e) {
    for (std::size_t k = b; k < e; ++k) {
      if (exponent_[k] == kAllZero || exponent_[k] == kNotFinite) continue;
      const double scale = std::ldexp(1.0, shift - 1 - static_cast<int>(exponent_[k]));
      std::uint64_t s = 0;  // two's complement: wraps back to the exact sum
      for (std::size_t i = 0; i < local; ++i)
        s += static_cast<std::uint64_t>(
            static_cast<std::int64_t>(static_cast<double>((*params[i])[k]) * scale));
      sum_[k] = s;
    }
  });
  if (ranks.size() > 1) ranks.AllReduceSum(sum_);
  for (std::size_t k = 0; k < d; ++k) {
    if (exponent_[k] == kAllZero) {
      average_[k] = 0;
    } else if (exponent_[k] == kNotFinite) {
      average_[k] = std::numeric_limits<float>::quiet_NaN();
    } else {
      const double scale = std::ldexp(1.0, shift - 1 - static_cast<int>(exponent_[k]));
      average_[k] = static_cast<float>(static_cast<double>(static_cast<std::int64_t>(sum_[k])) / scale /
                                       static_cast<double>(n));
    }
  }
}

EvalPoint Evaluator::Evaluate(const std::vector<const ParamVector*>& params, std::span<const double> losses,
                              RankGroup& ranks, std::span<const std::size_t> positions, std::size_t total) {
  EvalPoint p;
  const std::size_t local = params.size();
  const std::size_t n = total;
  const int rank = ranks.rank();
  MURMUR_CHECK(losses.empty() || losses.size() == local);
  MURMUR_CHECK(positions.size() == local && std::is_sorted(positions.begin(), positions.end()));
  Average(params, ranks, n);
  // Each model's squared distance to x_bar, its last loss, and the test
  // numbers of those evaluated (evenly spread ids), gathered to rank 0.
  std::vector<float> dist(local);
  pool_.ParallelFor(local, 16, [&](std::size_t b, std::size_t e) {
    for (std::size_t i = b; i < e; ++i) dist[i] = FixedSquaredDistance(params[i]->span(), average_.span());
  });
  const std::size_t k = std::min(eval_nodes_ == 0 ? n : eval_nodes_, n);
  std::vector<std::size_t> mine, at;  // evaluated models j (of k) this rank holds, and where in params
  for (std::size_t j = 0; j < k; ++j) {
    auto it = std::lower_bound(positions.begin(), positions.end(), j * n / k);
    if (it == positions.end() || *it != j * n / k) continue;
    mine.push_back(j);
    at.push_back(static_cast<std::size_t>(it - positions.begin()));
  }
  std::vector<ml::Evaluation> results(mine.size());
  auto measure_nodes = [&](std::size_t b, std::size_t e) {
    for (std::size_t j = b; j < e; ++j) results[j] = measure_(*params[at[j]], sample_, nullptr);
  };
  if (parallel_) {
    pool_.ParallelFor(mine.size(), 1, measure_nodes);
  } else {
    measure_nodes(0, mine.size());
  }
  Bytes gathered;
  PutValue<std::uint64_t>(gathered, local);
  for (std::size_t pos : positions) PutValue<std::uint64_t>(gathered, pos);
  PutValues<float>(gathered, dist);
  PutValues<double>(gathered, losses);
  if (losses.empty()) gathered.resize(gathered.size() + local * sizeof(double), 0);  // no losses: zeros
  PutValue<std::uint64_t>(gathered, results.size());
  for (std::size_t j = 0; j < results.size(); ++j) {
    PutValue<std::uint64_t>(gathered, mine[j]);
    PutValue<double>(gathered, results[j].accuracy);
    PutValue<double>(gathered, results[j].loss);
  }
  std::vector<Bytes> all = ranks.Gather(std::move(gathered));
  double shared[8] = {};
  if (rank == 0) {
    // Every rank's numbers, put in position order.
    std::vector<float> all_dist(n);
    std::vector<double> all_loss(n), acc(k), loss(k);
    std::size_t seen = 0, measured = 0;
    std::vector<std::uint64_t> pos;
    std::vector<float> dists;
    std::vector<double> losses_in;
    for (const Bytes& b : all) {
      ByteReader in(b);
      const auto m = in.Get<std::uint64_t>();
      pos.clear();
      dists.clear();
      losses_in.clear();
      in.Append<std::uint64_t>(pos, m);
      in.Append<float>(dists, m);
      in.Append<double>(losses_in, m);
      for (std::uint64_t i = 0; i < m; ++i) {
        MURMUR_CHECK(pos[i] < n);
        all_dist[pos[i]] = dists[i];
        all_loss[pos[i]] = losses_in[i];
      }
      seen += m;
      const auto e = in.Get<std::uint64_t>();
      for (std::uint64_t i = 0; i < e; ++i) {
        const auto j = in.Get<std::uint64_t>();
        MURMUR_CHECK(j < k);
        acc[j] = in.Get<double>();
        loss[j] = in.Get<double>();
      }
      measured += e;
    }
    MURMUR_CHECK(seen == n && measured == k);
    // (1/n) sum_i ||x_i - x_bar||^2 in chunks of 64 models, chunks summed in order.
    double consensus = 0;
    for (std::size_t b = 0; b < n; b += 64) {
      double s = 0;
      for (std::size_t i = b; i < std::min(n, b + 64); ++i) s += all_dist[i];
      consensus = consensus + s;
    }
    double train_loss = 0;
    for (double l : all_loss) train_loss += l;
    double acc_mean = 0, loss_mean = 0, acc_min = std::numeric_limits<double>::infinity(), acc_max = -acc_min;
    for (std::size_t j = 0; j < k; ++j) {
      acc_mean += acc[j] / static_cast<double>(k);
      loss_mean += loss[j] / static_cast<double>(k);
      acc_min = std::min(acc_min, acc[j]);
      acc_max = std::max(acc_max, acc[j]);
    }
    ml::Evaluation avg = measure_(average_, all_, parallel_ ? &pool_ : nullptr);
    const double values[8] = {consensus / static_cast<double>(n),
                              train_loss / static_cast<double>(n),
                              acc_mean,
                              loss_mean,
                              acc_min,
                              acc_max,
                              avg.accuracy,
                              avg.loss};
    std::copy(values, values + 8, shared);
  }
  if (ranks.size() > 1) {
    Bytes out;
    PutValues<double>(out, shared);
    Bytes in = ranks.Broadcast(std::move(out), 0);
    MURMUR_CHECK(in.size() == sizeof(shared));
    std::memcpy(shared, in.data(), sizeof(shared));
  }
  p.consensus = shared[0];
  p.train_loss = shared[1];
  p.acc_mean = shared[2];
  p.loss_mean = shared[3];
  p.acc_min = shared[4];
  p.acc_max = shared[5];
  p.avg_acc = shared[6];
  p.avg_loss = shared[7];
  return p;
}

void StampPoint(const Simulator& sim, NodeId nodes, std::uint64_t round, double wall_s, EvalPoint* p) {
  p->round = round;
  p->virtual_s = std::chrono::duration<double>(sim.now()).count();
  p->wall_s = wall_s;
  const TrafficStats t = sim.TotalTraffic();
  p->bytes_sent = t.bytes_sent;
  p->bytes_received = t.bytes_received;
  p->messages_lost = t.messages_lost;
  p->online = 0;
  for (NodeId i = 0; i < nodes; ++i) p->online += sim.online(i);
}

void StampPoint(const TrafficTotals& totals, Nanos at, std::uint64_t round, double wall_s, EvalPoint* p) {
  p->round = round;
  p->virtual_s = std::chrono::duration<double>(at).count();
  p->wall_s = wall_s;
  p->bytes_sent = totals.bytes_sent;
  p->bytes_received = totals.bytes_received;
  p->messages_lost = totals.messages_lost;
  p->online = static_cast<std::uint32_t>(totals.online);
}

void FinishSummary(const Simulator& sim, std::uint64_t rounds_done, double wall_s, RunSummary* summary) {
  summary->rounds_done = rounds_done;
  summary->wall_s = wall_s;
  summary->virtual_s = std::chrono::duration<double>(sim.now()).count();
  summary->peak_rss_bytes = PeakRssBytes();
  const TrafficStats t = sim.TotalTraffic();
  summary->messages_sent = t.messages_sent;
  summary->refused = t.refused;
}

}  // namespace murmur::sim
