// TorchScriptModel: ml/torch/torchscript_model.h through LibTorch, and the
// plugin's Load and Check (ml/torch/plugin_impl.h).
#include "ml/torch/torchscript_model.h"

#include <ATen/Parallel.h>
#include <torch/csrc/autograd/profiler_legacy.h>
#include <torch/csrc/jit/passes/inliner.h>
#include <torch/script.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <vector>

#include "core/local_tensors.h"
#include "core/rng.h"
#include "ml/model_spec.h"
#include "ml/torch/plugin_impl.h"

namespace murmur::ml::plugin {
namespace {

// Rows per forward pass when evaluating or predicting.
constexpr std::int64_t kEvalRows = 256;

// LibTorch's default CPU generator is one per process; steps of modules that
// draw random numbers reseed it and run under this lock.
std::mutex& RandomMutex() {
  static std::mutex mu;
  return mu;
}

std::string ShapeString(at::IntArrayRef sizes) {
  std::string s = "[";
  for (std::size_t i = 0; i < sizes.size(); ++i) s += (i ? ", " : "") + std::to_string(sizes[i]);
  return s + "]";
}

// True when the graph, or a block nested in it, has an operator that draws
// random numbers (dropout, bernoulli, rand*, normal, ...).
bool DrawsRandomNumbers(const torch::jit::Block* block) {
  static constexpr std::string_view kRandom[] = {"dropout",     "bernoulli",   "rand",    "normal",
                                                 "uniform",     "multinomial", "poisson", "cauchy",
                                                 "exponential", "geometric"};
  for (const torch::jit::Node* node : block->nodes()) {
    std::string_view kind = node->kind().toQualString();
    for (std::string_view r : kRandom)
      if (kind.find(r) != std::string_view::npos) return true;
    for (const torch::jit::Block* sub : node->blocks())
      if (DrawsRandomNumbers(sub)) return true;
  }
  return false;
}

// Folds 32-bit words into a running hash (FNV-1a's prime over words).
std::uint64_t HashWords(std::uint64_t h, const void* data, std::size_t bytes) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (std::size_t k = 0; k + 4 <= bytes; k += 4) {
    std::uint32_t w;
    std::memcpy(&w, p + k, sizeof w);
    h = (h ^ w) * 0x100000001b3ull;
  }
  return h;
}

// The seed of a training step of a module that draws random numbers, mixed
// with the caller's noise_seed (the node's dropout stream): a hash of the
// step's inputs, the batch's values and labels and the parameters.
// (Values, not sample indices: a daemon numbers its own shard's samples from
// 0, the simulator the whole dataset's.)
std::uint64_t StepSeed(std::span<const float> x, std::span<const std::int64_t> y, const ParamVector& params) {
  std::uint64_t h = Mix64(x.size());
  h = HashWords(h, x.data(), x.size_bytes());
  h = HashWords(h, y.data(), y.size_bytes());
  h = HashWords(h, params.data(), params.size() * sizeof(float));
  return Mix64(h);
}

struct TorchWorkspace final : public ModelWorkspace {
  torch::jit::Module module;
  // The module's parameters, then its float32 buffers, in Layout order:
  // handles to the module's own tensors, re-pointed at each call's vectors.
  std::vector<at::Tensor> tensors;
  std::vector<float> x;
  std::vector<std::int64_t> y;
  int training = -1;  // the module's mode: 1 train, 0 eval, -1 not set yet
};

TorchWorkspace& Cast(ModelWorkspace& ws) {
  auto* w = dynamic_cast<TorchWorkspace*>(&ws);
  MURMUR_CHECK_MSG(w != nullptr, "workspace was not made by a TorchScript model's NewWorkspace");
  return *w;
}

// The module's float32 buffers (BatchNorm's running statistics), in order.
std::vector<torch::jit::NameTensor> FloatBuffers(const torch::jit::Module& module) {
  std::vector<torch::jit::NameTensor> out;
  for (const auto& b : module.named_buffers(/*recurse=*/true))
    if (b.value.scalar_type() == at::kFloat) out.push_back(b);
  return out;
}

class TorchScriptModel final : public Model {
 public:
  TorchScriptModel(std::string spec, std::string archive, std::vector<std::int64_t> sample_shape,
                   int num_classes)
      : spec_(std::move(spec)),
        archive_(std::move(archive)),
        sample_shape_(std::move(sample_shape)),
        num_classes_(num_classes) {
    input_dim_ = 1;
    for (std::int64_t s : sample_shape_) input_dim_ *= s;
  }

  // Reads the module's tensors, forward's signature and randomness, checks
  // its output on two zero samples and measures its FLOPs.
  Status Init(const std::string& path);

  std::string spec() const override { return spec_; }
  const Layout& layout() const override { return layout_; }
  std::int64_t input_dim() const override { return input_dim_; }
  int num_classes() const override { return num_classes_; }
  double FlopsPerSample() const override { return flops_per_sample_; }
  bool ReturnsOwnLoss() const override { return loss_forward_; }

  std::unique_ptr<ModelWorkspace> NewWorkspace() const override {
    auto ws = std::make_unique<TorchWorkspace>();
    ws->module = Load();
    for (const auto& p : ws->module.named_parameters(/*recurse=*/true)) ws->tensors.push_back(p.value);
    for (const auto& b : FloatBuffers(ws->module)) ws->tensors.push_back(b.value);
    MURMUR_CHECK(ws->tensors.size() == layout_.num_tensors());
    return ws;
  }

  void InitParams(ParamVector& params, Rng&) const override {
    MURMUR_CHECK(params.size() == layout_.total_size());
    std::copy(initial_.begin(), initial_.end(), params.data());
  }

  double LossAndGradient(const ParamVector& params, const Dataset& data, std::span<const SampleIndex> batch,
                         ParamVector& grad, ModelWorkspace& ws_base, ThreadPool* pool = nullptr,
                         std::uint64_t noise_seed = 0) const override;
  void Predict(const ParamVector& params, const Dataset& data, std::span<const SampleIndex> samples,
               std::span<std::int32_t> out, ModelWorkspace& ws, ThreadPool* pool = nullptr) const override;
  using Model::Evaluate;
  Evaluation Evaluate(const ParamVector& params, const Dataset& data, std::span<const SampleIndex> samples,
                      ModelWorkspace& ws, ThreadPool* pool = nullptr) const override;

 private:
  torch::jit::Module Load() const {
    std::istringstream in(archive_);
    return torch::jit::load(in, at::kCPU);
  }

  // Points the workspace module's tensors at `params` and, when `grad` is
  // given, their gradients at `grad` (zeroed).
  void Bind(TorchWorkspace& ws, const ParamVector& params, ParamVector* grad) const;
  void SetTraining(TorchWorkspace& ws, bool training) const {
    if (ws.training == static_cast<int>(training)) return;
    ws.module.train(training);
    ws.training = training;
  }
  // Gathers `rows` into the workspace: the input tensor [m, sample_shape...]
  // and the labels [m], views of the workspace's memory.
  std::pair<at::Tensor, at::Tensor> Gather(TorchWorkspace& ws, const Dataset& data,
                                           std::span<const SampleIndex> rows) const;
  // The summed loss over an evaluation chunk, counting correct predictions
  // into `correct` and writing them to `pred` when non-null.
  double EvalChunk(TorchWorkspace& ws, const Dataset& data, std::span<const SampleIndex> rows,
                   std::int64_t* correct, std::int32_t* pred) const;

  std::string spec_;
  std::string archive_;  // the file's bytes: each workspace loads its own module from them
  std::vector<std::int64_t> sample_shape_;
  int num_classes_;
  std::int64_t input_dim_ = 0;
  Layout layout_;
  std::size_t num_parameters_ = 0;                // the first tensors of layout_; the rest are buffers
  std::vector<std::vector<std::int64_t>> sizes_;  // each tensor's LibTorch shape (a scalar has none)
  std::vector<float> initial_;
  bool loss_forward_ = false;  // forward(x, y) returns the loss
  bool random_ = false;        // forward draws random numbers (dropout)
  double flops_per_sample_ = 0;
};

Status TorchScriptModel::Init(const std::string& path) {
  MURMUR_ASSIGN_OR_RETURN(torch::jit::Module module, ModuleOf(archive_, path));
  auto forward = module.find_method("forward");
  if (!forward)
    return Status::InvalidArgument("'" + path + "': the TorchScript module has no forward method");
  const std::size_t args = forward->function().getSchema().arguments().size();  // self included
  if (args != 2 && args != 3)
    return Status::InvalidArgument("'" + path + "': forward takes " + std::to_string(args - 1) +
                                   " inputs; murmur calls forward(x) for logits or forward(x, y) for a loss");
  loss_forward_ = args == 3;

  auto add = [&](const std::string& name, const at::Tensor& t) -> Status {
    if (t.scalar_type() != at::kFloat)
      return Status::InvalidArgument("'" + path + "': tensor '" + name + "' is " +
                                     std::string(c10::toString(t.scalar_type())) +
                                     "; murmur trains float32 (call model.float() before saving)");
    if (t.numel() == 0) return Status::InvalidArgument("'" + path + "': tensor '" + name + "' is empty");
    std::vector<std::int64_t> shape(t.sizes().begin(), t.sizes().end());
    sizes_.push_back(shape);
    if (shape.empty()) shape.push_back(1);
    layout_.Add(name, shape);
    if (layout_.total_size() > static_cast<std::size_t>(kMaxParams))
      return Status::InvalidArgument("'" + path + "': more than " + std::to_string(kMaxParams) +
                                     " parameters");
    at::Tensor c = t.detach().contiguous();
    initial_.insert(initial_.end(), c.data_ptr<float>(), c.data_ptr<float>() + c.numel());
    return Status::Ok();
  };
  for (const auto& p : module.named_parameters(/*recurse=*/true))
    MURMUR_RETURN_IF_ERROR(add(p.name, p.value));
  num_parameters_ = layout_.num_tensors();
  if (num_parameters_ == 0)
    return Status::InvalidArgument("'" + path + "': the module has no parameters to train");
  for (const auto& b : FloatBuffers(module))
    MURMUR_RETURN_IF_ERROR(add(std::string(kBufferTensorPrefix) + b.name, b.value));

  // Random operators: in the code of every method of every submodule (the
  // graphs inlined as far as they go), ...
  for (const torch::jit::Module& m : module.modules()) {
    for (const torch::jit::Method& method : m.get_methods()) {
      std::shared_ptr<torch::jit::Graph> graph = method.graph()->copy();
      torch::jit::Inline(*graph);
      random_ = random_ || DrawsRandomNumbers(graph->block());
    }
  }

  // Two zero samples, in eval mode: the output must be logits [2, classes]
  // or a scalar loss.
  SetUpLibTorchThread();
  std::vector<std::int64_t> batch_shape{2};
  batch_shape.insert(batch_shape.end(), sample_shape_.begin(), sample_shape_.end());
  const std::string input = "forward on a batch of shape " + ShapeString(batch_shape);
  try {
    at::Tensor x = at::zeros(batch_shape, at::kFloat);
    at::Tensor y = at::zeros({2}, at::kLong);
    std::vector<c10::IValue> inputs{x};
    if (loss_forward_) inputs.emplace_back(y);
    module.eval();
    c10::IValue out;
    {
      c10::NoGradGuard no_grad;
      out = module.forward(inputs);
    }
    if (!out.isTensor())
      return Status::InvalidArgument("'" + path + "': " + input + " returned a " + out.tagKind() +
                                     ", not a tensor");
    at::Tensor t = out.toTensor();
    if (loss_forward_ && t.numel() != 1)
      return Status::InvalidArgument("'" + path + "': forward(x, y) must return the loss, a scalar; " +
                                     input + " returned shape " + ShapeString(t.sizes()));
    if (!loss_forward_ && (t.dim() != 2 || t.size(0) != 2 || t.size(1) != num_classes_))
      return Status::InvalidArgument(
          "'" + path + "': " + input + " returned shape " + ShapeString(t.sizes()) + "; the data has " +
          std::to_string(num_classes_) + " classes, so expected [2, " + std::to_string(num_classes_) + "]");

    // FLOPs: LibTorch's profiler counts the operators it has formulas for
    // (convolutions, matrix products, elementwise arithmetic) on a forward
    // pass; a training step is counted as 3 forward passes (the backward pass
    // does about twice the forward's work: the input and weight gradients).
    module.train();
    {
      c10::NoGradGuard no_grad;
      torch::autograd::profiler::enableProfilerLegacy(torch::profiler::impl::ProfilerConfig(
          torch::profiler::impl::ProfilerState::CPU, /*report_input_shapes=*/true, false, false,
          /*with_flops=*/true));
      (void)module.forward(inputs);
      auto events = torch::autograd::profiler::disableProfilerLegacy();
      double flops = 0;
      for (auto& list : events)
        for (auto& event : list) flops += static_cast<double>(event.flops());
      flops_per_sample_ = 3 * flops / 2;
    }
    // ... or in what forward does: two training passes over the same
    // samples under two seeds differ only when it draws random numbers.
    if (!random_) {
      c10::NoGradGuard no_grad;
      // Values in [0, 1]: the range of every dataset's pixels, and valid
      // token ids (0 and 1) for a byte-level model that reads x.long().
      std::vector<c10::IValue> varied{at::linspace(0, 1, x.numel()).reshape(x.sizes())};
      if (loss_forward_) varied.emplace_back(y);
      std::lock_guard<std::mutex> lock(RandomMutex());
      at::manual_seed(1);
      at::Tensor first = module.forward(varied).toTensor().clone();
      at::manual_seed(2);
      random_ = !at::equal(first, module.forward(varied).toTensor());
    }
  } catch (const std::exception& e) {
    return Status::InvalidArgument("'" + path + "': " + input + " failed: " + FirstLine(e.what()));
  }
  // Operators without a formula only: the dense-layer estimate, 6 per parameter.
  if (flops_per_sample_ <= 0) flops_per_sample_ = 6 * static_cast<double>(layout_.total_size());
  return Status::Ok();
}

void TorchScriptModel::Bind(TorchWorkspace& ws, const ParamVector& params, ParamVector* grad) const {
  MURMUR_CHECK(params.size() == layout_.total_size());
  // The module reads parameters and writes only its buffers (BatchNorm's
  // running statistics, in training): see the header.
  float* base = const_cast<float*>(params.data());
  for (std::size_t i = 0; i < layout_.num_tensors(); ++i) {
    const TensorSpec& t = layout_.tensor(i);
    at::Tensor& tensor = ws.tensors[i];
    if (tensor.data_ptr() != base + t.offset)
      tensor.set_data(at::from_blob(base + t.offset, sizes_[i], at::kFloat));
    if (i >= num_parameters_) continue;
    if (grad == nullptr) {
      tensor.mutable_grad() = at::Tensor();
    } else {
      at::Tensor g = at::from_blob(grad->data() + t.offset, sizes_[i], at::kFloat);
      g.zero_();
      tensor.mutable_grad() = g;
    }
  }
  if (grad != nullptr && num_parameters_ < layout_.num_tensors()) {
    const std::size_t buffers = layout_.tensor(num_parameters_).offset;
    std::fill(grad->data() + buffers, grad->data() + grad->size(), 0.0f);
  }
}

std::pair<at::Tensor, at::Tensor> TorchScriptModel::Gather(TorchWorkspace& ws, const Dataset& data,
                                                           std::span<const SampleIndex> rows) const {
  MURMUR_CHECK(data.dim == input_dim_);
  const auto m = static_cast<std::int64_t>(rows.size());
  ws.x.resize(rows.size() * static_cast<std::size_t>(input_dim_));
  ws.y.resize(rows.size());
  data.Gather(rows, ws.x.data());
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const int label = data.labels[rows[i]];
    MURMUR_CHECK(label >= 0 && label < num_classes_);
    ws.y[i] = label;
  }
  std::vector<std::int64_t> shape{m};
  shape.insert(shape.end(), sample_shape_.begin(), sample_shape_.end());
  return {at::from_blob(ws.x.data(), shape, at::kFloat), at::from_blob(ws.y.data(), {m}, at::kLong)};
}

double TorchScriptModel::LossAndGradient(const ParamVector& params, const Dataset& data,
                                         std::span<const SampleIndex> batch, ParamVector& grad,
                                         ModelWorkspace& ws_base, ThreadPool*,
                                         std::uint64_t noise_seed) const {
  MURMUR_CHECK(!batch.empty() && grad.size() == params.size());
  SetUpLibTorchThread();
  TorchWorkspace& ws = Cast(ws_base);
  Bind(ws, params, &grad);
  SetTraining(ws, true);
  auto [x, y] = Gather(ws, data, batch);
  std::unique_lock<std::mutex> lock;
  if (random_) {
    lock = std::unique_lock<std::mutex>(RandomMutex());
    at::manual_seed(Mix64(noise_seed ^ StepSeed(ws.x, ws.y, params)));
  }
  double loss = 0;
  try {
    at::Tensor l = loss_forward_ ? ws.module.forward({x, y}).toTensor()
                                 : at::cross_entropy_loss(ws.module.forward({x}).toTensor(), y);
    l.backward();
    loss = l.item<double>();
  } catch (const std::exception& e) {
    // Load checked the module on this input shape; a later failure is the
    // module's own (for example a shape that depends on the values).
    MURMUR_CHECK_MSG(false, "TorchScript model " + spec_ + ": training step failed: " + FirstLine(e.what()));
  }
  // Backward accumulates into the gradient views in place. Should a module
  // have replaced a gradient or a buffer tensor, copy its values over.
  for (std::size_t i = 0; i < layout_.num_tensors(); ++i) {
    const TensorSpec& t = layout_.tensor(i);
    if (i < num_parameters_) {
      const at::Tensor& g = ws.tensors[i].grad();
      if (g.defined() && g.data_ptr() != grad.data() + t.offset)
        at::from_blob(grad.data() + t.offset, sizes_[i], at::kFloat).copy_(g);
    }
  }
  if (num_parameters_ < layout_.num_tensors()) {
    std::size_t i = num_parameters_;
    for (const auto& b : FloatBuffers(ws.module)) {
      float* home = const_cast<float*>(params.data()) + layout_.tensor(i).offset;
      if (b.value.data_ptr() != home) {
        at::from_blob(home, sizes_[i], at::kFloat).copy_(b.value);
        ws.tensors[i] = b.value;
      }
      ++i;
    }
  }
  return loss;
}

double TorchScriptModel::EvalChunk(TorchWorkspace& ws, const Dataset& data, std::span<const SampleIndex> rows,
                                   std::int64_t* correct, std::int32_t* pred) const {
  auto [x, y] = Gather(ws, data, rows);
  try {
    if (loss_forward_) {
      if (pred != nullptr) std::fill(pred, pred + rows.size(), -1);
      return ws.module.forward({x, y}).toTensor().item<double>() * static_cast<double>(rows.size());
    }
    at::Tensor logits = ws.module.forward({x}).toTensor();
    at::Tensor arg = logits.argmax(1);
    const std::int64_t* a = arg.data_ptr<std::int64_t>();
    for (std::size_t i = 0; i < rows.size(); ++i) {
      if (correct != nullptr && a[i] == ws.y[i]) ++*correct;
      if (pred != nullptr) pred[i] = static_cast<std::int32_t>(a[i]);
    }
    return at::cross_entropy_loss(logits, y, {}, at::Reduction::Sum).item<double>();
  } catch (const std::exception& e) {
    MURMUR_CHECK_MSG(false, "TorchScript model " + spec_ + ": evaluation failed: " + FirstLine(e.what()));
  }
  return 0;
}

void TorchScriptModel::Predict(const ParamVector& params, const Dataset& data,
                               std::span<const SampleIndex> samples, std::span<std::int32_t> out,
                               ModelWorkspace& ws_base, ThreadPool*) const {
  MURMUR_CHECK(out.size() == samples.size());
  SetUpLibTorchThread();
  TorchWorkspace& ws = Cast(ws_base);
  Bind(ws, params, nullptr);
  SetTraining(ws, false);
  c10::NoGradGuard no_grad;
  for (std::size_t b = 0; b < samples.size(); b += kEvalRows) {
    const std::size_t e = std::min(samples.size(), b + kEvalRows);
    (void)EvalChunk(ws, data, samples.subspan(b, e - b), nullptr, out.data() + b);
  }
}

Evaluation TorchScriptModel::Evaluate(const ParamVector& params, const Dataset& data,
                                      std::span<const SampleIndex> samples, ModelWorkspace& ws_base,
                                      ThreadPool*) const {
  SetUpLibTorchThread();
  TorchWorkspace& ws = Cast(ws_base);
  Evaluation ev;
  ev.count = static_cast<std::int64_t>(samples.size());
  if (ev.count == 0) return ev;
  Bind(ws, params, nullptr);
  SetTraining(ws, false);
  c10::NoGradGuard no_grad;
  double loss = 0;
  std::int64_t correct = 0;
  for (std::size_t b = 0; b < samples.size(); b += kEvalRows) {
    const std::size_t e = std::min(samples.size(), b + kEvalRows);
    loss += EvalChunk(ws, data, samples.subspan(b, e - b), &correct, nullptr);
  }
  ev.loss = loss / static_cast<double>(ev.count);
  ev.accuracy = static_cast<double>(correct) / static_cast<double>(ev.count);
  return ev;
}

}  // namespace

Result<std::unique_ptr<Model>> Load(std::string_view spec, std::span<const std::int64_t> sample_shape,
                                    int num_classes) {
  MURMUR_ASSIGN_OR_RETURN(std::string path, TorchScriptPath(spec));
  if (sample_shape.empty() || num_classes <= 0)
    return Status::InvalidArgument("model spec '" + std::string(spec) +
                                   "': data has no sample shape or classes");
  MURMUR_ASSIGN_OR_RETURN(std::string archive, ReadArchive(path));
  auto model = std::make_unique<TorchScriptModel>(
      std::string(spec), std::move(archive),
      std::vector<std::int64_t>(sample_shape.begin(), sample_shape.end()), num_classes);
  MURMUR_RETURN_IF_ERROR(model->Init(path));
  return std::unique_ptr<Model>(std::move(model));
}

Status Check(std::string_view spec) {
  MURMUR_ASSIGN_OR_RETURN(std::string path, TorchScriptPath(spec));
  MURMUR_ASSIGN_OR_RETURN(std::string archive, ReadArchive(path));
  return ModuleOf(archive, path).status();
}

}  // namespace murmur::ml::plugin
