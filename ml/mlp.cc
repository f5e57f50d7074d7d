#include "ml/mlp.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <mutex>

namespace murmur::ml {
namespace {

// Rows per chunk when evaluating or predicting (no gradient, so any size works).
constexpr std::int64_t kEvalRows = 256;

using RowVectorMap = Eigen::Map<Eigen::RowVectorXf>;
using ConstRowVectorMap = Eigen::Map<const Eigen::RowVectorXf>;
using ColumnMap = Eigen::Map<Eigen::VectorXf>;

// Every buffer is aligned the same way (Eigen's maximum alignment): Eigen's
// vectorized reductions peel an alignment-dependent head, so buffers aligned
// differently would make the sums, and the results, depend on which scratch
// slot (thread) ran a chunk.
using Buffer = std::vector<float, Eigen::aligned_allocator<float>>;

// Scratch for one chunk of rows in flight on one thread.
struct Scratch {
  Buffer x;                 // rows x input_dim, the gathered samples
  std::vector<Buffer> act;  // per layer: rows x width (post-ReLU; the last holds logits, then P)
  Buffer g0, g1;            // rows x widest hidden layer: backpropagated gradients
  Buffer row_max, row_sum;  // rows
};

class MlpWorkspace final : public ModelWorkspace {
 public:
  MlpWorkspace(const std::vector<std::int64_t>& widths, std::int64_t rows) : widths_(widths), rows_(rows) {}

  // A free Scratch slot; at most one per concurrently running chunk, created on first need.
  Scratch* Acquire() {
    std::lock_guard<std::mutex> lock(mu_);
    for (std::size_t i = 0; i < slots_.size(); ++i) {
      if (!busy_[i]) {
        busy_[i] = true;
        return slots_[i].get();
      }
    }
    auto s = std::make_unique<Scratch>();
    std::size_t r = static_cast<std::size_t>(rows_);
    s->x.resize(r * static_cast<std::size_t>(widths_.front()));
    std::int64_t widest = 1;
    for (std::size_t l = 1; l < widths_.size(); ++l) {
      s->act.emplace_back(r * static_cast<std::size_t>(widths_[l]));
      if (l + 1 < widths_.size()) widest = std::max(widest, widths_[l]);
    }
    s->g0.resize(r * static_cast<std::size_t>(widest));
    s->g1.resize(r * static_cast<std::size_t>(widest));
    s->row_max.resize(r);
    s->row_sum.resize(r);
    slots_.push_back(std::move(s));
    busy_.push_back(true);
    return slots_.back().get();
  }
  void Release(Scratch* s) {
    std::lock_guard<std::mutex> lock(mu_);
    for (std::size_t i = 0; i < slots_.size(); ++i)
      if (slots_[i].get() == s) busy_[i] = false;
  }

  // Per-chunk gradient buffers of a training batch, summed in chunk order.
  std::vector<Buffer>& chunk_grads(std::size_t chunks, std::size_t size) {
    if (chunk_grads_.size() < chunks) chunk_grads_.resize(chunks);
    for (std::size_t c = 0; c < chunks; ++c) chunk_grads_[c].resize(size);
    if (chunk_losses_.size() < chunks) chunk_losses_.resize(chunks);
    return chunk_grads_;
  }
  std::vector<double>& chunk_losses() { return chunk_losses_; }

 private:
  std::vector<std::int64_t> widths_;
  std::int64_t rows_;
  std::mutex mu_;  // guards slots_ and busy_
  std::vector<std::unique_ptr<Scratch>> slots_;
  std::vector<bool> busy_;
  std::vector<Buffer> chunk_grads_;
  std::vector<double> chunk_losses_;
};

MlpWorkspace& Cast(ModelWorkspace& ws) {
  auto* w = dynamic_cast<MlpWorkspace*>(&ws);
  MURMUR_CHECK_MSG(w != nullptr, "workspace was not made by Mlp::NewWorkspace");
  return *w;
}

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

}  // namespace

Mlp::Mlp(MlpOptions options) : options_(std::move(options)) {
  MURMUR_CHECK(options_.input_dim > 0 && options_.num_classes > 0 && options_.chunk_rows > 0);
  widths_.push_back(options_.input_dim);
  for (std::int64_t h : options_.hidden) {
    MURMUR_CHECK(h > 0);
    widths_.push_back(h);
  }
  widths_.push_back(options_.num_classes);
  for (std::size_t l = 0; l + 1 < widths_.size(); ++l) {
    layout_.Add("dense" + std::to_string(l) + ".weight", {widths_[l], widths_[l + 1]});
    layout_.Add("dense" + std::to_string(l) + ".bias", {widths_[l + 1]});
  }
}

std::string Mlp::spec() const {
  if (options_.hidden.empty()) return "softmax";
  std::string s = "mlp:";
  for (std::size_t i = 0; i < options_.hidden.size(); ++i) {
    if (i > 0) s += ',';
    s += std::to_string(options_.hidden[i]);
  }
  return s;
}

// Matrix products only: forward 2 in out per layer; backward 2 in out for dW
// and 2 in out for the input gradient of every layer but the first. Bias,
// ReLU and softmax work is O(width), negligible next to these.
double Mlp::FlopsPerSample() const {
  double flops = 0;
  for (std::size_t l = 0; l + 1 < widths_.size(); ++l) {
    double mac = static_cast<double>(widths_[l]) * static_cast<double>(widths_[l + 1]);
    flops += (l == 0 ? 4 : 6) * mac;
  }
  return flops;
}

std::unique_ptr<ModelWorkspace> Mlp::NewWorkspace() const {
  return std::make_unique<MlpWorkspace>(widths_, std::max(options_.chunk_rows, kEvalRows));
}

void Mlp::InitParams(ParamVector& params, Rng& rng) const {
  MURMUR_CHECK(params.size() == layout_.total_size());
  std::size_t layers = widths_.size() - 1;
  for (std::size_t l = 0; l < layers; ++l) {
    std::span<float> w = params.tensor_span(2 * l);
    double fan_in = static_cast<double>(widths_[l]);
    double fan_out = static_cast<double>(widths_[l + 1]);
    if (l + 1 < layers) {
      double sd = std::sqrt(2.0 / fan_in);
      for (float& v : w) v = static_cast<float>(sd * rng.Normal());
    } else {
      double a = std::sqrt(6.0 / (fan_in + fan_out));
      for (float& v : w) v = static_cast<float>(rng.Uniform(-a, a));
    }
    for (float& v : params.tensor_span(2 * l + 1)) v = 0;
  }
}

namespace {

// Gathers rows, runs the forward pass, turns the logits into probabilities in
// place and returns the summed cross-entropy; counts correct argmax predictions
// and writes them to `pred` when non-null.
double ForwardChunk(const Mlp& model, const ParamVector& params, const Dataset& data,
                    std::span<const SampleIndex> rows, Scratch& s, std::int64_t* correct,
                    std::int32_t* pred) {
  const auto& widths = model.widths();
  const std::int64_t m = static_cast<std::int64_t>(rows.size());
  const std::int64_t d = widths.front();
  MURMUR_CHECK(data.dim == d);
  data.Gather(rows, s.x.data());
  const float* in = s.x.data();
  std::size_t layers = widths.size() - 1;
  for (std::size_t l = 0; l < layers; ++l) {
    MatrixMap z(s.act[l].data(), m, widths[l + 1]);
    z.noalias() = ConstMatrixMap(in, m, widths[l]) * params.matrix(2 * l);
    std::span<const float> b = params.tensor_span(2 * l + 1);
    z.rowwise() += ConstRowVectorMap(b.data(), widths[l + 1]);
    if (l + 1 < layers) z = z.cwiseMax(0.0f);
    in = z.data();
  }
  const int c = model.num_classes();
  MatrixMap p(s.act[layers - 1].data(), m, c);
  ColumnMap mx(s.row_max.data(), m), sum(s.row_sum.data(), m);
  mx = p.rowwise().maxCoeff();
  p.colwise() -= mx;
  double loss = 0;
  for (std::int64_t i = 0; i < m; ++i) {
    int y = data.labels[rows[static_cast<std::size_t>(i)]];
    MURMUR_CHECK(y >= 0 && y < c);
    Eigen::Index arg;
    p.row(i).maxCoeff(&arg);
    if (correct != nullptr && arg == y) ++*correct;
    if (pred != nullptr) pred[i] = static_cast<std::int32_t>(arg);
    loss -= p(i, y);  // z_y - max, before exponentiation
  }
  p.array() = p.array().exp();
  sum = p.rowwise().sum();
  for (std::int64_t i = 0; i < m; ++i) loss += std::log(static_cast<double>(sum[i]));
  p.array().colwise() /= sum.array();
  return loss;
}

}  // namespace

double Mlp::LossAndGradient(const ParamVector& params, const Dataset& data,
                            std::span<const SampleIndex> batch, ParamVector& grad, ModelWorkspace& ws_base,
                            ThreadPool* pool) const {
  MURMUR_CHECK(!batch.empty() && params.size() == layout_.total_size() && grad.size() == params.size());
  MlpWorkspace& ws = Cast(ws_base);
  const std::size_t rows = static_cast<std::size_t>(options_.chunk_rows);
  const std::size_t chunks = (batch.size() + rows - 1) / rows;
  const float inv_batch = 1.0f / static_cast<float>(batch.size());
  const std::size_t layers = widths_.size() - 1;
  auto& grads = ws.chunk_grads(chunks > 1 ? chunks : 0, params.size());
  auto& losses = ws.chunk_losses();
  if (losses.size() < chunks) losses.resize(chunks);

  ForChunks(batch.size(), rows, pool, [&](std::size_t c, std::size_t b, std::size_t e) {
    Scratch* s = ws.Acquire();
    const std::int64_t m = static_cast<std::int64_t>(e - b);
    std::span<const SampleIndex> part = batch.subspan(b, e - b);
    losses[c] = ForwardChunk(*this, params, data, part, *s, nullptr, nullptr);
    float* out = chunks > 1 ? grads[c].data() : grad.data();
    // G_L = (P - Y) / B, in place over P.
    MatrixMap g(s->act[layers - 1].data(), m, options_.num_classes);
    for (std::int64_t i = 0; i < m; ++i) g(i, data.labels[part[static_cast<std::size_t>(i)]]) -= 1.0f;
    g *= inv_batch;
    float* g_data = g.data();
    for (std::size_t l = layers; l-- > 0;) {
      const std::int64_t in_w = widths_[l], out_w = widths_[l + 1];
      ConstMatrixMap gl(g_data, m, out_w);
      const float* a_prev = l == 0 ? s->x.data() : s->act[l - 1].data();
      ConstMatrixMap a(a_prev, m, in_w);
      const TensorSpec& wt = layout_.tensor(2 * l);
      const TensorSpec& bt = layout_.tensor(2 * l + 1);
      MatrixMap(out + wt.offset, in_w, out_w).noalias() = a.transpose() * gl;
      RowVectorMap(out + bt.offset, out_w) = gl.colwise().sum();
      if (l > 0) {
        float* next = g_data == s->g0.data() ? s->g1.data() : s->g0.data();
        MatrixMap gp(next, m, in_w);
        gp.noalias() = gl * params.matrix(2 * l).transpose();
        gp = (a.array() > 0.0f).select(gp, 0.0f);
        g_data = next;
      }
    }
    ws.Release(s);
  });

  double loss = 0;
  for (std::size_t c = 0; c < chunks; ++c) loss += losses[c];
  loss /= static_cast<double>(batch.size());
  if (chunks > 1) {
    VectorMap total = grad.vec();
    total = Eigen::Map<const Eigen::VectorXf>(grads[0].data(), static_cast<Eigen::Index>(grad.size()));
    for (std::size_t c = 1; c < chunks; ++c)
      total += Eigen::Map<const Eigen::VectorXf>(grads[c].data(), static_cast<Eigen::Index>(grad.size()));
  }
  if (options_.l2 > 0) {
    const float l2 = static_cast<float>(options_.l2);
    for (std::size_t l = 0; l < layers; ++l) {
      ConstMatrixMap w = params.matrix(2 * l);
      grad.matrix(2 * l) += l2 * w;
      loss += 0.5 * options_.l2 * static_cast<double>(w.squaredNorm());
    }
  }
  return loss;
}

void Mlp::Predict(const ParamVector& params, const Dataset& data, std::span<const SampleIndex> samples,
                  std::span<std::int32_t> out, ModelWorkspace& ws_base, ThreadPool* pool) const {
  MURMUR_CHECK(out.size() == samples.size() && params.size() == layout_.total_size());
  MlpWorkspace& ws = Cast(ws_base);
  ForChunks(samples.size(), kEvalRows, pool, [&](std::size_t, std::size_t b, std::size_t e) {
    Scratch* s = ws.Acquire();
    (void)ForwardChunk(*this, params, data, samples.subspan(b, e - b), *s, nullptr, out.data() + b);
    ws.Release(s);
  });
}

Evaluation Mlp::Evaluate(const ParamVector& params, const Dataset& data, std::span<const SampleIndex> samples,
                         ModelWorkspace& ws_base, ThreadPool* pool) const {
  MURMUR_CHECK(params.size() == layout_.total_size());
  MlpWorkspace& ws = Cast(ws_base);
  std::size_t chunks = (samples.size() + kEvalRows - 1) / kEvalRows;
  std::vector<double> loss(chunks, 0);
  std::vector<std::int64_t> correct(chunks, 0);
  ForChunks(samples.size(), kEvalRows, pool, [&](std::size_t c, std::size_t b, std::size_t e) {
    Scratch* s = ws.Acquire();
    loss[c] = ForwardChunk(*this, params, data, samples.subspan(b, e - b), *s, &correct[c], nullptr);
    ws.Release(s);
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

}  // namespace murmur::ml
