#include "sim/evaluator.h"

#include <algorithm>
#include <cstring>
#include <limits>

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
  return Evaluate(params, {}, *one, 0, params.size());
}

EvalPoint Evaluator::Evaluate(const std::vector<const ParamVector*>& params, std::span<const double> losses,
                              RankGroup& ranks, std::size_t first, std::size_t total) {
  EvalPoint p;
  const std::size_t local = params.size();
  const std::size_t n = total;
  const std::size_t d = average_.size();
  const int rank = ranks.rank(), last = ranks.size() - 1;
  MURMUR_CHECK(losses.empty() || losses.size() == local);
  // x_bar: per coordinate, a double sum over the models in id order: coordinate
  // chunks in parallel; across ranks the partial sums pass down the ranks.
  if (ranks.size() == 1) {
    pool_.ParallelFor(d, 4096, [&](std::size_t b, std::size_t e) {
      for (std::size_t k = b; k < e; ++k) {
        double s = 0;
        for (std::size_t i = 0; i < n; ++i) s += (*params[i])[k];
        average_[k] = static_cast<float>(s / static_cast<double>(n));
      }
    });
  } else {
    std::vector<double> sum(d, 0.0);
    if (rank > 0) {
      Bytes in = ranks.Recv(rank - 1);
      MURMUR_CHECK(in.size() == d * sizeof(double));
      std::memcpy(sum.data(), in.data(), in.size());
    }
    pool_.ParallelFor(d, 4096, [&](std::size_t b, std::size_t e) {
      for (std::size_t k = b; k < e; ++k) {
        double s = sum[k];
        for (std::size_t i = 0; i < local; ++i) s += (*params[i])[k];
        sum[k] = s;
      }
    });
    Bytes avg;
    if (rank < last) {
      Bytes out;
      PutValues<double>(out, sum);
      ranks.Send(rank + 1, std::move(out));
    } else {
      for (std::size_t k = 0; k < d; ++k) average_[k] = static_cast<float>(sum[k] / static_cast<double>(n));
      PutValues<float>(avg, average_.span());
    }
    avg = ranks.Broadcast(std::move(avg), last);
    MURMUR_CHECK(avg.size() == d * sizeof(float));
    std::memcpy(average_.span().data(), avg.data(), avg.size());
  }
  // Each model's squared distance to x_bar, its last loss, and the test
  // numbers of those evaluated (evenly spread ids), gathered to rank 0.
  std::vector<float> dist(local);
  pool_.ParallelFor(local, 16, [&](std::size_t b, std::size_t e) {
    for (std::size_t i = b; i < e; ++i) dist[i] = (params[i]->vec() - average_.vec()).squaredNorm();
  });
  const std::size_t k = std::min(eval_nodes_ == 0 ? n : eval_nodes_, n);
  std::vector<std::size_t> mine;  // positions j (of k) whose model this rank holds
  for (std::size_t j = 0; j < k; ++j) {
    const std::size_t id = j * n / k;
    if (id >= first && id < first + local) mine.push_back(j);
  }
  std::vector<ml::Evaluation> results(mine.size());
  auto measure_nodes = [&](std::size_t b, std::size_t e) {
    for (std::size_t j = b; j < e; ++j)
      results[j] = measure_(*params[mine[j] * n / k - first], sample_, nullptr);
  };
  if (parallel_) {
    pool_.ParallelFor(mine.size(), 1, measure_nodes);
  } else {
    measure_nodes(0, mine.size());
  }
  Bytes gathered;
  PutValue<std::uint64_t>(gathered, local);
  PutValues<float>(gathered, dist);
  PutValues<double>(gathered, losses);
  if (losses.empty()) gathered.resize(gathered.size() + local * sizeof(double), 0);  // no losses: zeros
  PutValue<std::uint64_t>(gathered, results.size());
  for (const auto& r : results) {
    PutValue<double>(gathered, r.accuracy);
    PutValue<double>(gathered, r.loss);
  }
  std::vector<Bytes> all = ranks.Gather(std::move(gathered));
  double shared[8] = {};
  if (rank == 0) {
    std::vector<float> all_dist;
    std::vector<double> all_loss, acc, loss;
    for (const Bytes& b : all) {
      ByteReader in(b);
      const auto m = in.Get<std::uint64_t>();
      in.Append<float>(all_dist, m);
      in.Append<double>(all_loss, m);
      const auto e = in.Get<std::uint64_t>();
      for (std::uint64_t j = 0; j < e; ++j) {
        acc.push_back(in.Get<double>());
        loss.push_back(in.Get<double>());
      }
    }
    MURMUR_CHECK(all_dist.size() == n && acc.size() == k);
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
  summary->messages_sent = sim.TotalTraffic().messages_sent;
}

}  // namespace murmur::sim
