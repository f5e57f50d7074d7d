// Evaluator: the numbers of one evaluation point.
//
// Per-node accuracy is measured on `eval_nodes` nodes spread evenly over the
// ids (all nodes when there are no more than that) and on a fixed random
// subset of `eval_samples` test samples; the average model x_bar = (1/n)
// sum_i x_i is measured on the whole test set; consensus distance is
// (1/n) sum_i ||x_i - x_bar||^2 over all nodes. Work is split in fixed chunks
// and reduced in order, so results do not depend on the thread count.
//
// In a partitioned run every rank holds some of the models (any of them,
// sim/ranks/placement.h) and calls Evaluate together: x_bar is summed exactly, in
// integers on a grid fixed by each coordinate's largest magnitude, so no
// order of the models and no split over ranks changes a bit of it (Average
// says how, and how close it is); the per-model numbers are gathered to rank
// 0, put in position order, summed there in that order, and the point is
// shared. So the point is the same bit for bit for any number of ranks and
// any placement.
//
// Models are measured by the spec's ml::Model, or by a caller's function
// (sim/run/external_learning.h), which may be called one node at a time on the
// calling thread instead of on the pool.
//
// Thread-safety: Evaluate from one thread at a time (it uses the pool).
#pragma once

#include <functional>
#include <span>
#include <vector>

#include "core/thread_pool.h"
#include "ml/dataset.h"
#include "ml/model.h"
#include "sim/net/simulator.h"
#include "sim/ranks/ranks.h"
#include "sim/run/metrics.h"
#include "sim/run/run_summary.h"

namespace murmur::sim {

class Evaluator {
 public:
  // Accuracy and mean loss of one model on test samples; `pool` (may be null)
  // is for splitting the samples, and is null when models are measured in parallel.
  using Measure = std::function<ml::Evaluation(const ParamVector& params,
                                               std::span<const ml::SampleIndex> samples, ThreadPool* pool)>;

  // Measures with `model`. `model` and `test` must outlive the evaluator.
  Evaluator(const ml::Model& model, const ml::Dataset& test, std::size_t eval_nodes, std::size_t eval_samples,
            std::uint64_t seed, ThreadPool& pool);
  // Measures models shaped by `layout` with `measure`: on the pool when
  // `parallel`, otherwise one after the other on the calling thread.
  Evaluator(Measure measure, const Layout& layout, bool parallel, const ml::Dataset& test,
            std::size_t eval_nodes, std::size_t eval_samples, std::uint64_t seed, ThreadPool& pool);

  // Fills the accuracy, loss and consensus fields of an EvalPoint.
  EvalPoint Evaluate(const std::vector<const ParamVector*>& params);
  // The same over models spread across ranks: this rank holds the models at
  // `positions` (ascending, of [0, total)), and `losses` their last training
  // losses (train_loss is their mean over all ranks). Every rank calls it;
  // every rank gets the whole point.
  EvalPoint Evaluate(const std::vector<const ParamVector*>& params, std::span<const double> losses,
                     RankGroup& ranks, std::span<const std::size_t> positions, std::size_t total);

 private:
  // Sets average_ to the mean of `n` models spread over `ranks`, this rank's
  // being `params`, bit for bit the same for any split and order.
  void Average(const std::vector<const ParamVector*>& params, RankGroup& ranks, std::size_t n);

  Measure measure_;
  bool parallel_;
  std::size_t eval_nodes_;
  std::vector<ml::SampleIndex> sample_;  // the per-node test subset
  std::vector<ml::SampleIndex> all_;
  ThreadPool& pool_;
  ParamVector average_;
  std::vector<std::int64_t> exponent_;  // Average's scratch, per coordinate
  std::vector<std::uint64_t> sum_;
};

// Fills what every evaluation point records besides accuracy: the round, the
// virtual and wall time, the network's traffic so far and how many of nodes
// [0, nodes) are online (a federated server, an extra node, is not counted).
void StampPoint(const Simulator& sim, NodeId nodes, std::uint64_t round, double wall_s, EvalPoint* p);

// The same from traffic totals already summed over the ranks, as they were at `at`.
void StampPoint(const TrafficTotals& totals, Nanos at, std::uint64_t round, double wall_s, EvalPoint* p);

// Fills the summary's totals at the end of a run.
void FinishSummary(const Simulator& sim, std::uint64_t rounds_done, double wall_s, RunSummary* summary);

}  // namespace murmur::sim
