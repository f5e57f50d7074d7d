#include "ml/mlp.h"

#include <algorithm>
#include <cmath>
#include <memory>

#include "core/gemm.h"
#include "core/reduce.h"
#include "ml/chunks.h"
#include "ml/softmax.h"

namespace murmur::ml {
namespace {

// Rows per chunk when evaluating or predicting (no gradient, so any size works).
constexpr std::int64_t kEvalRows = 256;

using ConstRowVectorMap = Eigen::Map<const Eigen::RowVectorXf>;

// Scratch for one chunk of rows in flight on one thread.
struct Scratch {
  Buffer x;                 // rows x input_dim, the gathered samples
  std::vector<Buffer> act;  // per layer: rows x width (post-ReLU; the last holds logits, then P)
  Buffer g0, g1;            // rows x widest hidden layer: backpropagated gradients
};

std::unique_ptr<Scratch> NewScratch(const std::vector<std::int64_t>& widths, std::int64_t rows) {
  auto s = std::make_unique<Scratch>();
  std::size_t r = static_cast<std::size_t>(rows);
  s->x.resize(r * static_cast<std::size_t>(widths.front()));
  std::int64_t widest = 1;
  for (std::size_t l = 1; l < widths.size(); ++l) {
    s->act.emplace_back(r * static_cast<std::size_t>(widths[l]));
    if (l + 1 < widths.size()) widest = std::max(widest, widths[l]);
  }
  s->g0.resize(r * static_cast<std::size_t>(widest));
  s->g1.resize(r * static_cast<std::size_t>(widest));
  return s;
}

using MlpWorkspace = ChunkedWorkspace<Scratch>;

MlpWorkspace& Cast(ModelWorkspace& ws) { return WorkspaceOf<Scratch>(ws, "Mlp"); }

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
  const std::int64_t rows = std::max(options_.chunk_rows, kEvalRows);
  return std::make_unique<MlpWorkspace>([widths = widths_, rows] { return NewScratch(widths, rows); });
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
    Gemm(MatrixView::RowMajor(in, m, widths[l]), params.matrix_view(2 * l), z.data(), widths[l + 1],
         GemmMode::kSet);
    std::span<const float> b = params.tensor_span(2 * l + 1);
    z.rowwise() += ConstRowVectorMap(b.data(), widths[l + 1]);
    if (l + 1 < layers) z = z.cwiseMax(0.0f);
    in = z.data();
  }
  MatrixMap p(s.act[layers - 1].data(), m, model.num_classes());
  return SoftmaxCrossEntropy(p, data, rows, correct, pred);
}

}  // namespace

double Mlp::LossAndGradient(const ParamVector& params, const Dataset& data,
                            std::span<const SampleIndex> batch, ParamVector& grad, ModelWorkspace& ws_base,
                            ThreadPool* pool, std::uint64_t /*noise_seed: an MLP has no randomness*/) const {
  MURMUR_CHECK(!batch.empty() && params.size() == layout_.total_size() && grad.size() == params.size());
  MlpWorkspace& ws = Cast(ws_base);
  const std::size_t rows = static_cast<std::size_t>(options_.chunk_rows);
  const std::size_t chunks = (batch.size() + rows - 1) / rows;
  const std::size_t layers = widths_.size() - 1;
  ws.chunks.Prepare(chunks, params.size());

  ForChunks(batch.size(), rows, pool, [&](std::size_t c, std::size_t b, std::size_t e) {
    Scratch* s = ws.scratch.Acquire();
    const std::int64_t m = static_cast<std::int64_t>(e - b);
    std::span<const SampleIndex> part = batch.subspan(b, e - b);
    ws.chunks.loss(c) = ForwardChunk(*this, params, data, part, *s, nullptr, nullptr);
    float* out = ws.chunks.out(c, grad);
    // G_L = (P - Y) / B, in place over P.
    MatrixMap g(s->act[layers - 1].data(), m, options_.num_classes);
    SoftmaxGradient(g, data, part, batch.size());
    float* g_data = g.data();
    for (std::size_t l = layers; l-- > 0;) {
      const std::int64_t in_w = widths_[l], out_w = widths_[l + 1];
      const float* a_prev = l == 0 ? s->x.data() : s->act[l - 1].data();
      ConstMatrixMap a(a_prev, m, in_w);
      const TensorSpec& wt = layout_.tensor(2 * l);
      const TensorSpec& bt = layout_.tensor(2 * l + 1);
      Gemm(MatrixView::RowMajor(a_prev, m, in_w).T(), MatrixView::RowMajor(g_data, m, out_w), out + wt.offset,
           out_w, GemmMode::kSet);
      ColumnSums(g_data, m, out_w, out_w, out + bt.offset);
      if (l > 0) {
        float* next = g_data == s->g0.data() ? s->g1.data() : s->g0.data();
        MatrixMap gp(next, m, in_w);
        Gemm(MatrixView::RowMajor(g_data, m, out_w), params.matrix_view(2 * l).T(), next, in_w,
             GemmMode::kSet);
        gp = (a.array() > 0.0f).select(gp, 0.0f);
        g_data = next;
      }
    }
    ws.scratch.Release(s);
  });

  double loss = ws.chunks.Sum(grad) / static_cast<double>(batch.size());
  if (options_.l2 > 0) {
    const float l2 = static_cast<float>(options_.l2);
    for (std::size_t l = 0; l < layers; ++l) {
      ConstMatrixMap w = params.matrix(2 * l);
      grad.matrix(2 * l) += l2 * w;
      loss += 0.5 * options_.l2 * static_cast<double>(FixedSquaredNorm(params.tensor_span(2 * l)));
    }
  }
  return loss;
}

void Mlp::Predict(const ParamVector& params, const Dataset& data, std::span<const SampleIndex> samples,
                  std::span<std::int32_t> out, ModelWorkspace& ws, ThreadPool* pool) const {
  MURMUR_CHECK(out.size() == samples.size() && params.size() == layout_.total_size());
  PredictInChunks(
      Cast(ws), samples, out, kEvalRows, pool,
      [&](Scratch& s, std::span<const SampleIndex> part, std::int64_t* correct, std::int32_t* pred) {
        return ForwardChunk(*this, params, data, part, s, correct, pred);
      });
}

Evaluation Mlp::Evaluate(const ParamVector& params, const Dataset& data, std::span<const SampleIndex> samples,
                         ModelWorkspace& ws, ThreadPool* pool) const {
  MURMUR_CHECK(params.size() == layout_.total_size());
  return EvaluateInChunks(
      Cast(ws), samples, kEvalRows, pool,
      [&](Scratch& s, std::span<const SampleIndex> part, std::int64_t* correct, std::int32_t* pred) {
        return ForwardChunk(*this, params, data, part, s, correct, pred);
      });
}

}  // namespace murmur::ml
