#include "sim/evaluator.h"

#include <algorithm>
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
  EvalPoint p;
  const std::size_t n = params.size();
  const std::size_t d = average_.size();
  // x_bar, coordinate chunks in parallel, nodes summed in id order.
  pool_.ParallelFor(d, 4096, [&](std::size_t b, std::size_t e) {
    for (std::size_t k = b; k < e; ++k) {
      double s = 0;
      for (std::size_t i = 0; i < n; ++i) s += (*params[i])[k];
      average_[k] = static_cast<float>(s / static_cast<double>(n));
    }
  });
  p.consensus = pool_.ParallelReduce(
                    n, 64, 0.0,
                    [&](std::size_t b, std::size_t e) {
                      double s = 0;
                      for (std::size_t i = b; i < e; ++i)
                        s += (params[i]->vec() - average_.vec()).squaredNorm();
                      return s;
                    },
                    [](double a, double b) { return a + b; }) /
                static_cast<double>(n);
  // Nodes to evaluate: evenly spread ids.
  std::size_t k = std::min(eval_nodes_ == 0 ? n : eval_nodes_, n);
  std::vector<ml::Evaluation> results(k);
  auto measure_nodes = [&](std::size_t b, std::size_t e) {
    for (std::size_t j = b; j < e; ++j) results[j] = measure_(*params[j * n / k], sample_, nullptr);
  };
  if (parallel_) {
    pool_.ParallelFor(k, 1, measure_nodes);
  } else {
    measure_nodes(0, k);
  }
  p.acc_min = std::numeric_limits<double>::infinity();
  p.acc_max = -p.acc_min;
  for (const auto& r : results) {
    p.acc_mean += r.accuracy / static_cast<double>(k);
    p.loss_mean += r.loss / static_cast<double>(k);
    p.acc_min = std::min(p.acc_min, r.accuracy);
    p.acc_max = std::max(p.acc_max, r.accuracy);
  }
  ml::Evaluation avg = measure_(average_, all_, parallel_ ? &pool_ : nullptr);
  p.avg_acc = avg.accuracy;
  p.avg_loss = avg.loss;
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

void FinishSummary(const Simulator& sim, std::uint64_t rounds_done, double wall_s, RunSummary* summary) {
  summary->rounds_done = rounds_done;
  summary->wall_s = wall_s;
  summary->virtual_s = std::chrono::duration<double>(sim.now()).count();
  summary->peak_rss_bytes = PeakRssBytes();
  summary->messages_sent = sim.TotalTraffic().messages_sent;
}

}  // namespace murmur::sim
