#include "ml/cnn.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>

#include "core/gemm.h"
#include "core/reduce.h"
#include "ml/chunks.h"
#include "ml/direct_conv.h"
#include "ml/softmax.h"

namespace murmur::ml {
namespace {

using ConstRowVectorMap = Eigen::Map<const Eigen::RowVectorXf>;
using ColumnVectorMap = Eigen::Map<Eigen::VectorXf>;
using ConstColumnVectorMap = Eigen::Map<const Eigen::VectorXf>;

// Evaluation chunks hold about this many activation values (4 x 2^22 bytes).
constexpr std::int64_t kEvalValues = std::int64_t{1} << 22;

ConvGeometry Geometry(const Cnn::Stage& s) {
  return {s.in, s.layer.size, s.layer.kernel, s.layer.stride, s.layer.pad};
}

// Scratch for one chunk of rows in flight on one thread.
struct Scratch {
  Buffer x;                                       // rows x input size: the gathered samples
  std::vector<Buffer> act;                        // per stage: rows x output size (after its ReLU)
  std::vector<Buffer> aux;                        // per stage: group norm xhat, dropout factors
  std::vector<Buffer> inv_std;                    // per group-norm stage: rows x groups
  std::vector<std::vector<std::int32_t>> argmax;  // per max-pool stage: rows x output size
  Buffer cols, dcols;                             // one sample's im2col matrix, the widest convolution's
  Buffer padded;                                  // one zero-padded sample, the widest convolution's (Im2Col)
  Buffer g0, g1;                                  // rows x widest activation: backpropagated gradients
  std::vector<std::unique_ptr<DirectConv>> direct;  // per stage: a convolution's direct kernels, or none
};

std::unique_ptr<Scratch> NewScratch(const std::vector<Cnn::Stage>& stages, std::int64_t rows, bool direct) {
  auto s = std::make_unique<Scratch>();
  const auto r = static_cast<std::size_t>(rows);
  s->x.resize(r * static_cast<std::size_t>(stages.front().in.size()));
  std::int64_t widest = stages.front().in.size(), cols = 0, padded = 0;
  for (const Cnn::Stage& st : stages) {
    const auto n = r * static_cast<std::size_t>(st.out.size());
    widest = std::max(widest, st.out.size());
    s->act.emplace_back(n);
    const bool aux = st.layer.kind == CnnLayerKind::kGroupNorm || st.layer.kind == CnnLayerKind::kDropout;
    s->aux.emplace_back(aux ? n : 0);
    s->inv_std.emplace_back(
        st.layer.kind == CnnLayerKind::kGroupNorm ? r * static_cast<std::size_t>(st.layer.size) : 0);
    s->argmax.emplace_back(st.layer.kind == CnnLayerKind::kMaxPool ? n : 0);
    s->direct.emplace_back();
    if (st.layer.kind == CnnLayerKind::kConv) {
      const ConvGeometry g = Geometry(st);
      if (direct && DirectConv::Supports(g)) {
        s->direct.back() = std::make_unique<DirectConv>(g);
        continue;
      }
      cols = std::max(cols, g.patch() * g.out().h * g.out().w);
      padded = std::max(padded, g.padded_size());
    }
  }
  s->padded.resize(static_cast<std::size_t>(padded));
  s->cols.resize(static_cast<std::size_t>(cols));
  s->dcols.resize(static_cast<std::size_t>(cols));
  s->g0.resize(r * static_cast<std::size_t>(widest));
  s->g1.resize(r * static_cast<std::size_t>(widest));
  return s;
}

using CnnWorkspace = ChunkedWorkspace<Scratch>;

CnnWorkspace& Cast(ModelWorkspace& ws) { return WorkspaceOf<Scratch>(ws, "Cnn"); }

// db[c] = (first ? 0 : db[c]) + the sum of channel c's row of dy (channels
// x positions, row-major), each row summed in core/reduce.h's fixed order.
void AddChannelSums(const float* dy, std::int64_t channels, std::int64_t positions, bool first, float* db) {
  for (std::int64_t c = 0; c < channels; ++c) {
    const float sum = FixedSum({dy + c * positions, static_cast<std::size_t>(positions)});
    db[c] = first ? sum : db[c] + sum;
  }
}

void Relu(float* v, std::int64_t n) {
  ColumnVectorMap x(v, n);
  x = x.cwiseMax(0.0f);
}

// What a forward pass over one chunk needs besides the scratch.
struct Pass {
  const ParamVector& params;
  bool train;               // dropout active
  std::uint64_t noise = 0;  // the step's noise seed
  std::size_t first = 0;    // position of the chunk's first row in the batch
};

// Runs the layers over the m gathered samples in s.x; the last stage's
// activations are the logits.
void Forward(const std::vector<Cnn::Stage>& stages, const Pass& pass, std::int64_t m, Scratch& s) {
  const float* in = s.x.data();
  for (std::size_t l = 0; l < stages.size(); ++l) {
    const Cnn::Stage& st = stages[l];
    const std::int64_t isz = st.in.size(), osz = st.out.size();
    float* out = s.act[l].data();
    switch (st.layer.kind) {
      case CnnLayerKind::kConv: {
        const ConvGeometry g = Geometry(st);
        const std::int64_t positions = st.out.h * st.out.w;
        ConstMatrixMap w = pass.params.matrix(static_cast<std::size_t>(st.weight));
        ConstColumnVectorMap b(pass.params.tensor_span(static_cast<std::size_t>(st.bias)).data(), st.out.c);
        if (DirectConv* d = s.direct[l].get()) {
          // The bias and the ReLU are applied as each tile is written out.
          d->PackForward(w.data());
          for (std::int64_t i = 0; i < m; ++i)
            d->Forward(in + i * isz, b.data(), st.layer.relu, out + i * osz);
          in = out;
          continue;
        }
        for (std::int64_t i = 0; i < m; ++i) {
          Im2Col(g, in + i * isz, s.cols.data(), s.padded.data());
          MatrixMap y(out + i * osz, st.out.c, positions);
          Gemm(pass.params.matrix_view(static_cast<std::size_t>(st.weight)),
               MatrixView::RowMajor(s.cols.data(), g.patch(), positions), y.data(), positions,
               GemmMode::kSet);
          y.colwise() += b;
        }
        break;
      }
      case CnnLayerKind::kDense: {
        MatrixMap z(out, m, osz);
        Gemm(MatrixView::RowMajor(in, m, isz), pass.params.matrix_view(static_cast<std::size_t>(st.weight)),
             out, osz, GemmMode::kSet);
        z.rowwise() +=
            ConstRowVectorMap(pass.params.tensor_span(static_cast<std::size_t>(st.bias)).data(), osz);
        break;
      }
      case CnnLayerKind::kMaxPool:
        for (std::int64_t i = 0; i < m; ++i)
          MaxPoolForward(st.in, st.layer.size, in + i * isz, out + i * osz, s.argmax[l].data() + i * osz);
        break;
      case CnnLayerKind::kAvgPool:
        for (std::int64_t i = 0; i < m; ++i)
          AvgPoolForward(st.in, st.layer.size, in + i * isz, out + i * osz);
        break;
      case CnnLayerKind::kGroupNorm: {
        const float* gamma = pass.params.tensor_span(static_cast<std::size_t>(st.weight)).data();
        const float* beta = pass.params.tensor_span(static_cast<std::size_t>(st.bias)).data();
        for (std::int64_t i = 0; i < m; ++i)
          GroupNormForward(st.in, st.layer.size, in + i * isz, gamma, beta, s.aux[l].data() + i * osz,
                           s.inv_std[l].data() + i * st.layer.size, out + i * osz);
        break;
      }
      case CnnLayerKind::kDropout:
        if (!pass.train) continue;  // evaluation: the identity, so the next layer reads this one's input
        for (std::int64_t i = 0; i < m; ++i)
          DropoutForward(osz, st.layer.p, pass.noise, (pass.first + static_cast<std::size_t>(i)) * 1024 + l,
                         in + i * isz, out + i * osz, s.aux[l].data() + i * osz);
        break;
    }
    if (st.layer.relu) Relu(out, m * osz);
    in = out;
  }
}

// Backpropagates the logits' gradient, in the last stage's activations, to
// every parameter; writes them to out (every parameter belongs to one stage,
// which writes its gradient with its first sample and adds the others').
void Backward(const std::vector<Cnn::Stage>& stages, const ParamVector& params, std::int64_t m, Scratch& s,
              float* out, const Layout& layout) {
  float* g = s.act.back().data();  // the gradient of this stage's output
  bool relu_applied = false;       // g is already zero where this stage's ReLU was
  for (std::size_t l = stages.size(); l-- > 0;) {
    const Cnn::Stage& st = stages[l];
    const std::int64_t isz = st.in.size(), osz = st.out.size();
    // Max pooling after a ReLU takes the ReLU's backward pass too: its dx is
    // zero but at each window's maximum, whose activation is the pooling's
    // output, so dy masked by (output > 0) before the scatter is the ReLU's
    // mask applied after it, on a quarter of the values.
    const bool fold = st.layer.kind == CnnLayerKind::kMaxPool && l > 0 && stages[l - 1].layer.relu;
    if ((st.layer.relu || fold) && !relu_applied) {
      ColumnVectorMap dy(g, m * osz);
      dy = (ConstColumnVectorMap(s.act[l].data(), m * osz).array() > 0.0f).select(dy, 0.0f);
    }
    relu_applied = fold;
    const float* in = l == 0 ? s.x.data() : s.act[l - 1].data();
    const bool need_dx = l > 0;
    float* dx = g == s.g0.data() ? s.g1.data() : s.g0.data();
    switch (st.layer.kind) {
      case CnnLayerKind::kConv: {
        const ConvGeometry g3 = Geometry(st);
        const std::int64_t positions = st.out.h * st.out.w, patch = g3.patch();
        const TensorSpec& wt = layout.tensor(static_cast<std::size_t>(st.weight));
        const TensorSpec& bt = layout.tensor(static_cast<std::size_t>(st.bias));
        MatrixMap dw(out + wt.offset, st.out.c, patch);
        ColumnVectorMap db(out + bt.offset, st.out.c);
        ConstMatrixMap w = params.matrix(static_cast<std::size_t>(st.weight));
        if (DirectConv* d = s.direct[l].get()) {
          if (need_dx) d->PackInputGradient(w.data());
          for (std::int64_t i = 0; i < m; ++i) {
            d->AccumulateWeightGradient(in + i * isz, g + i * osz, /*first=*/i == 0);
            AddChannelSums(g + i * osz, st.out.c, positions, i == 0, db.data());
            if (need_dx) d->InputGradient(g + i * osz, dx + i * isz);
          }
          d->WriteWeightGradient(dw.data());
          break;
        }
        for (std::int64_t i = 0; i < m; ++i) {
          const MatrixView dy = MatrixView::RowMajor(g + i * osz, st.out.c, positions);
          Im2Col(g3, in + i * isz, s.cols.data(), s.padded.data());
          // Each weight's chain runs on over the samples: sample i continues
          // the sum where sample i - 1 left it.
          Gemm(dy, MatrixView::RowMajor(s.cols.data(), patch, positions).T(), dw.data(), patch,
               i == 0 ? GemmMode::kSet : GemmMode::kAdd);
          AddChannelSums(g + i * osz, st.out.c, positions, i == 0, db.data());
          if (need_dx) {
            Gemm(params.matrix_view(static_cast<std::size_t>(st.weight)).T(), dy, s.dcols.data(), positions,
                 GemmMode::kSet);
            Col2Im(g3, s.dcols.data(), dx + i * isz, s.padded.data());
          }
        }
        break;
      }
      case CnnLayerKind::kDense: {
        const TensorSpec& wt = layout.tensor(static_cast<std::size_t>(st.weight));
        const TensorSpec& bt = layout.tensor(static_cast<std::size_t>(st.bias));
        Gemm(MatrixView::RowMajor(in, m, isz).T(), MatrixView::RowMajor(g, m, osz), out + wt.offset, osz,
             GemmMode::kSet);
        ColumnSums(g, m, osz, osz, out + bt.offset);
        if (need_dx)
          Gemm(MatrixView::RowMajor(g, m, osz), params.matrix_view(static_cast<std::size_t>(st.weight)).T(),
               dx, isz, GemmMode::kSet);
        break;
      }
      case CnnLayerKind::kMaxPool:
        for (std::int64_t i = 0; i < m && need_dx; ++i)
          MaxPoolBackward(st.in, st.layer.size, g + i * osz, s.argmax[l].data() + i * osz, dx + i * isz);
        break;
      case CnnLayerKind::kAvgPool:
        for (std::int64_t i = 0; i < m && need_dx; ++i)
          AvgPoolBackward(st.in, st.layer.size, g + i * osz, dx + i * isz);
        break;
      case CnnLayerKind::kGroupNorm: {
        const float* gamma = params.tensor_span(static_cast<std::size_t>(st.weight)).data();
        const TensorSpec& gt = layout.tensor(static_cast<std::size_t>(st.weight));
        const TensorSpec& bt = layout.tensor(static_cast<std::size_t>(st.bias));
        float* dgamma = out + gt.offset;
        float* dbeta = out + bt.offset;
        std::fill_n(dgamma, gt.size, 0.0f);  // summed over the samples below
        std::fill_n(dbeta, bt.size, 0.0f);
        for (std::int64_t i = 0; i < m; ++i)
          GroupNormBackward(st.in, st.layer.size, g + i * osz, s.aux[l].data() + i * osz,
                            s.inv_std[l].data() + i * st.layer.size, gamma, dx + i * isz, dgamma, dbeta);
        break;
      }
      case CnnLayerKind::kDropout: {
        ColumnVectorMap(dx, m * isz) =
            ConstColumnVectorMap(g, m * osz).cwiseProduct(ConstColumnVectorMap(s.aux[l].data(), m * osz));
        break;
      }
    }
    g = dx;
  }
}

// Evaluates one chunk: gathers `part`, runs the layers without dropout and
// returns the summed loss, counting or writing predictions where asked.
double ForwardChunk(const std::vector<Cnn::Stage>& stages, const ParamVector& params, const Dataset& data,
                    std::span<const SampleIndex> part, Scratch& s, std::int64_t* correct,
                    std::int32_t* pred) {
  const auto m = static_cast<std::int64_t>(part.size());
  data.Gather(part, s.x.data());
  Forward(stages, Pass{params, false}, m, s);
  MatrixMap p(s.act.back().data(), m, stages.back().out.size());
  return SoftmaxCrossEntropy(p, data, part, correct, pred);
}

}  // namespace

Result<std::vector<Shape3>> Cnn::Shapes(const CnnOptions& o) {
  std::vector<Shape3> shapes;
  Shape3 in = o.input;
  if (in.c <= 0 || in.h <= 0 || in.w <= 0)
    return Status::InvalidArgument("samples of shape " + std::to_string(in.c) + "x" + std::to_string(in.h) +
                                   "x" + std::to_string(in.w) + " are not images");
  for (std::size_t l = 0; l <= o.layers.size(); ++l) {
    CnnLayer layer = l < o.layers.size() ? o.layers[l] : CnnLayer{CnnLayerKind::kDense, o.num_classes};
    const std::string at = "layer " + std::to_string(l + 1) + " (input " + std::to_string(in.c) + "x" +
                           std::to_string(in.h) + "x" + std::to_string(in.w) + ")";
    Shape3 out = in;
    switch (layer.kind) {
      case CnnLayerKind::kConv:
        if (layer.kernel > in.h + 2 * layer.pad || layer.kernel > in.w + 2 * layer.pad)
          return Status::InvalidArgument(at + ": a " + std::to_string(layer.kernel) + "x" +
                                         std::to_string(layer.kernel) + " kernel does not fit");
        out = ConvGeometry{in, layer.size, layer.kernel, layer.stride, layer.pad}.out();
        break;
      case CnnLayerKind::kMaxPool:
      case CnnLayerKind::kAvgPool:
        if (layer.size > in.h || layer.size > in.w)
          return Status::InvalidArgument(at + ": a " + std::to_string(layer.size) + "x" +
                                         std::to_string(layer.size) + " pooling window does not fit");
        out = PoolOutput(in, layer.size);
        break;
      case CnnLayerKind::kDense: out = {layer.size, 1, 1}; break;
      case CnnLayerKind::kGroupNorm:
        if (in.c % layer.size != 0)
          return Status::InvalidArgument(at + ": " + std::to_string(layer.size) + " groups do not divide " +
                                         std::to_string(in.c) + " channels");
        break;
      case CnnLayerKind::kDropout: break;
    }
    shapes.push_back(out);
    in = out;
  }
  return shapes;
}

Cnn::Cnn(CnnOptions options) : options_(std::move(options)) {
  auto shapes = Shapes(options_);
  MURMUR_CHECK_MSG(shapes.ok(), shapes.status().ToString());
  MURMUR_CHECK(options_.chunk_rows > 0 && options_.num_classes > 0);
  Shape3 in = options_.input;
  std::int64_t values = in.size();
  for (std::size_t l = 0; l < shapes->size(); ++l) {
    Stage st;
    st.layer = l < options_.layers.size() ? options_.layers[l]
                                          : CnnLayer{CnnLayerKind::kDense, options_.num_classes};
    st.in = in;
    st.out = (*shapes)[l];
    const std::string n = std::to_string(l);
    auto add = [&](const std::string& name, std::vector<std::int64_t> shape) {
      return static_cast<int>(layout_.Add(name, std::move(shape)));
    };
    switch (st.layer.kind) {
      case CnnLayerKind::kConv:
        st.weight = add("conv" + n + ".weight", {st.out.c, Geometry(st).patch()});
        st.bias = add("conv" + n + ".bias", {st.out.c});
        break;
      case CnnLayerKind::kDense:
        st.weight = add("dense" + n + ".weight", {st.in.size(), st.out.size()});
        st.bias = add("dense" + n + ".bias", {st.out.size()});
        break;
      case CnnLayerKind::kGroupNorm:
        st.weight = add("norm" + n + ".weight", {st.in.c});
        st.bias = add("norm" + n + ".bias", {st.in.c});
        break;
      default: break;
    }
    stages_.push_back(st);
    values += 2 * st.out.size();
    in = st.out;
  }
  eval_rows_ = std::clamp<std::int64_t>(kEvalValues / values, 1, 256);
}

// Matrix products only: per convolution 2 out patch positions for the
// forward pass and as much for each of dW and (but for the first layer) the
// input gradient; dense layers as in Mlp::FlopsPerSample.
double Cnn::FlopsPerSample() const {
  double flops = 0;
  for (std::size_t l = 0; l < stages_.size(); ++l) {
    const Stage& st = stages_[l];
    double mac = 0;
    if (st.layer.kind == CnnLayerKind::kConv)
      mac = static_cast<double>(st.out.size()) * static_cast<double>(Geometry(st).patch());
    else if (st.layer.kind == CnnLayerKind::kDense)
      mac = static_cast<double>(st.in.size()) * static_cast<double>(st.out.size());
    flops += (l == 0 ? 4 : 6) * mac;
  }
  return flops;
}

std::unique_ptr<ModelWorkspace> Cnn::NewWorkspace() const {
  const std::int64_t rows = std::max(options_.chunk_rows, eval_rows_);
  return std::make_unique<CnnWorkspace>(
      [stages = stages_, rows, direct = options_.direct_conv] { return NewScratch(stages, rows, direct); });
}

void Cnn::InitParams(ParamVector& params, Rng& rng) const {
  MURMUR_CHECK(params.size() == layout_.total_size());
  for (std::size_t l = 0; l < stages_.size(); ++l) {
    const Stage& st = stages_[l];
    if (st.weight < 0) continue;
    std::span<float> w = params.tensor_span(static_cast<std::size_t>(st.weight));
    std::span<float> b = params.tensor_span(static_cast<std::size_t>(st.bias));
    std::fill(b.begin(), b.end(), 0.0f);
    if (st.layer.kind == CnnLayerKind::kGroupNorm) {
      std::fill(w.begin(), w.end(), 1.0f);
    } else if (l + 1 < stages_.size()) {
      const double fan_in =
          static_cast<double>(st.layer.kind == CnnLayerKind::kConv ? Geometry(st).patch() : st.in.size());
      const double sd = std::sqrt(2.0 / fan_in);
      for (float& v : w) v = static_cast<float>(sd * rng.Normal());
    } else {
      const double a = std::sqrt(6.0 / static_cast<double>(st.in.size() + st.out.size()));
      for (float& v : w) v = static_cast<float>(rng.Uniform(-a, a));
    }
  }
}

double Cnn::LossAndGradient(const ParamVector& params, const Dataset& data,
                            std::span<const SampleIndex> batch, ParamVector& grad, ModelWorkspace& ws_base,
                            ThreadPool* pool, std::uint64_t noise_seed) const {
  MURMUR_CHECK(!batch.empty() && params.size() == layout_.total_size() && grad.size() == params.size());
  MURMUR_CHECK(data.dim == input_dim());
  CnnWorkspace& ws = Cast(ws_base);
  const auto rows = static_cast<std::size_t>(options_.chunk_rows);
  const std::size_t chunks = (batch.size() + rows - 1) / rows;
  ws.chunks.Prepare(chunks, params.size());
  ForChunks(batch.size(), rows, pool, [&](std::size_t c, std::size_t b, std::size_t e) {
    Scratch* s = ws.scratch.Acquire();
    const auto m = static_cast<std::int64_t>(e - b);
    std::span<const SampleIndex> part = batch.subspan(b, e - b);
    data.Gather(part, s->x.data());
    Forward(stages_, Pass{params, true, noise_seed, b}, m, *s);
    MatrixMap p(s->act.back().data(), m, options_.num_classes);
    ws.chunks.loss(c) = SoftmaxCrossEntropy(p, data, part, nullptr, nullptr);
    SoftmaxGradient(p, data, part, batch.size());
    float* out = ws.chunks.out(c, grad);
    Backward(stages_, params, m, *s, out, layout_);
    ws.scratch.Release(s);
  });
  double loss = ws.chunks.Sum(grad) / static_cast<double>(batch.size());
  if (options_.l2 > 0) {
    const auto l2 = static_cast<float>(options_.l2);
    for (const Stage& st : stages_) {
      if (st.layer.kind != CnnLayerKind::kConv && st.layer.kind != CnnLayerKind::kDense) continue;
      ConstMatrixMap w = params.matrix(static_cast<std::size_t>(st.weight));
      grad.matrix(static_cast<std::size_t>(st.weight)) += l2 * w;
      loss += 0.5 * options_.l2 *
              static_cast<double>(FixedSquaredNorm({w.data(), static_cast<std::size_t>(w.size())}));
    }
  }
  return loss;
}

void Cnn::Predict(const ParamVector& params, const Dataset& data, std::span<const SampleIndex> samples,
                  std::span<std::int32_t> out, ModelWorkspace& ws, ThreadPool* pool) const {
  MURMUR_CHECK(out.size() == samples.size() && params.size() == layout_.total_size());
  PredictInChunks(
      Cast(ws), samples, out, static_cast<std::size_t>(eval_rows_), pool,
      [&](Scratch& s, std::span<const SampleIndex> part, std::int64_t* correct, std::int32_t* pred) {
        return ForwardChunk(stages_, params, data, part, s, correct, pred);
      });
}

Evaluation Cnn::Evaluate(const ParamVector& params, const Dataset& data, std::span<const SampleIndex> samples,
                         ModelWorkspace& ws, ThreadPool* pool) const {
  MURMUR_CHECK(params.size() == layout_.total_size());
  return EvaluateInChunks(
      Cast(ws), samples, static_cast<std::size_t>(eval_rows_), pool,
      [&](Scratch& s, std::span<const SampleIndex> part, std::int64_t* correct, std::int32_t* pred) {
        return ForwardChunk(stages_, params, data, part, s, correct, pred);
      });
}

}  // namespace murmur::ml
