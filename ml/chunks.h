// What every Model implementation shares to split a batch into fixed chunks:
// the chunk loop, a pool of per-chunk scratch slots, and the per-chunk
// gradient buffers that are summed in chunk order.
//
// A batch is cut into chunks of a fixed number of rows (the model's
// chunk_rows); chunks may run on different threads, each with its own
// scratch slot, and their gradients are summed in chunk order, so results
// depend on the chunk size and never on the thread count.
//
// Thread-safety: ScratchPool::Acquire/Release may be called from any thread;
// ChunkGradients belongs to the one call that sizes it; the chunk loops run
// their chunks on the pool.
#pragma once

#include <algorithm>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include <Eigen/Core>

#include "core/check.h"
#include "core/param_vector.h"
#include "core/thread_pool.h"
#include "ml/model.h"

namespace murmur::ml {

// Every scratch buffer is aligned the same way (Eigen's maximum alignment):
// Eigen's vectorized reductions peel an alignment-dependent head, so buffers
// aligned differently would make the sums, and the results, depend on which
// scratch slot (thread) ran a chunk.
using Buffer = std::vector<float, Eigen::aligned_allocator<float>>;

// Calls fn(chunk, begin, end) for the fixed chunks of `n` rows, on the pool when there is one.
template <typename Fn>
void ForChunks(std::size_t n, std::size_t rows, ThreadPool* pool, Fn fn) {
  std::size_t chunks = (n + rows - 1) / rows;
  auto body = [&](std::size_t cb, std::size_t ce) {
    for (std::size_t c = cb; c < ce; ++c) fn(c, c * rows, std::min(n, (c + 1) * rows));
  };
  if (pool != nullptr && chunks > 1) {
    pool->ParallelFor(chunks, 1, body);
  } else {
    body(0, chunks);
  }
}

// Scratch slots of type S, at most one per concurrently running chunk, made
// by `make` on first need and then reused.
template <typename S>
class ScratchPool {
 public:
  explicit ScratchPool(std::function<std::unique_ptr<S>()> make) : make_(std::move(make)) {}

  S* Acquire() {
    std::lock_guard<std::mutex> lock(mu_);
    for (std::size_t i = 0; i < slots_.size(); ++i) {
      if (!busy_[i]) {
        busy_[i] = true;
        return slots_[i].get();
      }
    }
    slots_.push_back(make_());
    busy_.push_back(true);
    return slots_.back().get();
  }
  void Release(S* s) {
    std::lock_guard<std::mutex> lock(mu_);
    for (std::size_t i = 0; i < slots_.size(); ++i)
      if (slots_[i].get() == s) busy_[i] = false;
  }

 private:
  std::function<std::unique_ptr<S>()> make_;
  std::mutex mu_;  // guards slots_ and busy_
  std::vector<std::unique_ptr<S>> slots_;
  std::vector<bool> busy_;
};

// The per-chunk losses and gradients of one training batch.
class ChunkGradients {
 public:
  // Sizes for `chunks` chunks of `size` gradient values. With one chunk the
  // caller writes straight into its gradient and no buffer is kept.
  void Prepare(std::size_t chunks, std::size_t size) {
    chunks_ = chunks;
    if (losses_.size() < chunks) losses_.resize(chunks);
    if (chunks > 1) {
      if (grads_.size() < chunks) grads_.resize(chunks);
      for (std::size_t c = 0; c < chunks; ++c) grads_[c].resize(size);
    }
  }
  // Where chunk c writes its gradient: `grad` itself when there is one chunk.
  float* out(std::size_t c, ParamVector& grad) { return chunks_ > 1 ? grads_[c].data() : grad.data(); }
  double& loss(std::size_t c) { return losses_[c]; }

  // Sums the chunks' gradients into `grad` in chunk order and returns the
  // summed loss.
  double Sum(ParamVector& grad) const {
    double loss = 0;
    for (std::size_t c = 0; c < chunks_; ++c) loss += losses_[c];
    if (chunks_ > 1) {
      VectorMap total = grad.vec();
      const auto n = static_cast<Eigen::Index>(grad.size());
      total = Eigen::Map<const Eigen::VectorXf>(grads_[0].data(), n);
      for (std::size_t c = 1; c < chunks_; ++c)
        total += Eigen::Map<const Eigen::VectorXf>(grads_[c].data(), n);
    }
    return loss;
  }

 private:
  std::size_t chunks_ = 0;
  std::vector<Buffer> grads_;
  std::vector<double> losses_;
};

// A model's workspace: its scratch slots and the chunk gradients of a batch.
template <typename S>
struct ChunkedWorkspace final : public ModelWorkspace {
  explicit ChunkedWorkspace(std::function<std::unique_ptr<S>()> make) : scratch(std::move(make)) {}
  ScratchPool<S> scratch;
  ChunkGradients chunks;
};

// `ws` as the workspace of a model whose scratch is S. REQUIRES: made by that
// model's NewWorkspace (`model` names it in the failure).
template <typename S>
ChunkedWorkspace<S>& WorkspaceOf(ModelWorkspace& ws, const char* model) {
  auto* w = dynamic_cast<ChunkedWorkspace<S>*>(&ws);
  MURMUR_CHECK_MSG(w != nullptr, std::string("workspace was not made by ") + model + "::NewWorkspace");
  return *w;
}

// Evaluates `samples` in chunks of `rows`: forward(scratch, chunk's samples,
// correct, pred) runs a chunk, returns its summed loss and counts or writes
// its predictions where those are non-null. The chunks' sums are added in
// chunk order.
template <typename S, typename Fn>
Evaluation EvaluateInChunks(ChunkedWorkspace<S>& ws, std::span<const SampleIndex> samples, std::size_t rows,
                            ThreadPool* pool, Fn forward) {
  const std::size_t chunks = (samples.size() + rows - 1) / rows;
  std::vector<double> loss(chunks, 0);
  std::vector<std::int64_t> correct(chunks, 0);
  ForChunks(samples.size(), rows, pool, [&](std::size_t c, std::size_t b, std::size_t e) {
    S* s = ws.scratch.Acquire();
    loss[c] = forward(*s, samples.subspan(b, e - b), &correct[c], nullptr);
    ws.scratch.Release(s);
  });
  Evaluation ev;
  ev.count = static_cast<std::int64_t>(samples.size());
  if (ev.count == 0) return ev;
  double total_loss = 0;
  std::int64_t total_correct = 0;
  for (std::size_t c = 0; c < chunks; ++c) total_loss += loss[c], total_correct += correct[c];
  ev.loss = total_loss / static_cast<double>(ev.count);
  ev.accuracy = static_cast<double>(total_correct) / static_cast<double>(ev.count);
  return ev;
}

// Writes the predictions of `samples` to out, in chunks of `rows` (as EvaluateInChunks).
template <typename S, typename Fn>
void PredictInChunks(ChunkedWorkspace<S>& ws, std::span<const SampleIndex> samples,
                     std::span<std::int32_t> out, std::size_t rows, ThreadPool* pool, Fn forward) {
  ForChunks(samples.size(), rows, pool, [&](std::size_t, std::size_t b, std::size_t e) {
    S* s = ws.scratch.Acquire();
    (void)forward(*s, samples.subspan(b, e - b), nullptr, out.data() + b);
    ws.scratch.Release(s);
  });
}

}  // namespace murmur::ml
