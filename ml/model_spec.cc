#include "ml/model_spec.h"

#include <charconv>
#include <string>

#include "ml/cnn_spec.h"
#include "ml/mlp.h"

namespace murmur::ml {

Result<std::unique_ptr<Model>> MakeModel(std::string_view spec, std::int64_t input_dim, int num_classes,
                                         const ModelSpecOptions& options) {
  const std::int64_t shape[] = {input_dim};
  return MakeModel(spec, shape, num_classes, options);
}

Status CheckModelSpec(std::string_view spec) {
  if (IsCnnSpec(spec)) return ParseCnnLayers(spec).status();
  return MakeModel(spec, 1, 2).status();
}

Result<std::unique_ptr<Model>> MakeModel(std::string_view spec, std::span<const std::int64_t> sample_shape,
                                         int num_classes, const ModelSpecOptions& options) {
  const std::string quoted = "model spec '" + std::string(spec) + "'";
  std::int64_t input_dim = sample_shape.empty() ? 0 : 1;
  for (std::int64_t s : sample_shape) input_dim = s <= 0 || input_dim > kMaxParams ? 0 : input_dim * s;
  if (input_dim <= 0 || num_classes <= 0)
    return Status::InvalidArgument(quoted + ": data has " + std::to_string(input_dim) + " features and " +
                                   std::to_string(num_classes) + " classes");
  if (options.chunk_rows <= 0) return Status::InvalidArgument(quoted + ": chunk rows must be positive");
  if (IsCnnSpec(spec)) {
    // Images are C x H x W; a 2-D sample is one channel; flat samples cannot be convolved.
    Shape3 image;
    if (sample_shape.size() == 3) image = {sample_shape[0], sample_shape[1], sample_shape[2]};
    if (sample_shape.size() == 2) image = {1, sample_shape[0], sample_shape[1]};
    if (image.size() <= 0 || image.size() != input_dim)
      return Status::InvalidArgument(quoted +
                                     " needs image samples (channels x height x width); the data's "
                                     "samples are flat vectors of " +
                                     std::to_string(input_dim) + " values");
    MURMUR_ASSIGN_OR_RETURN(CnnOptions cnn, ParseCnnSpec(spec, image, num_classes, kMaxParams));
    cnn.l2 = options.l2;
    cnn.chunk_rows = options.chunk_rows;
    return std::unique_ptr<Model>(std::make_unique<Cnn>(std::move(cnn)));
  }
  MlpOptions mlp;
  mlp.input_dim = input_dim;
  mlp.num_classes = num_classes;
  mlp.l2 = options.l2;
  mlp.chunk_rows = options.chunk_rows;
  if (spec == "softmax") return std::unique_ptr<Model>(std::make_unique<Mlp>(mlp));
  constexpr std::string_view kMlp = "mlp:";
  if (!spec.starts_with(kMlp)) {
    // A file name is most likely a TorchScript module given without its prefix.
    const bool file =
        spec.ends_with(".pt") || spec.ends_with(".pth") || spec.find('/') != std::string_view::npos;
    return Status::InvalidArgument(
        quoted +
        " unknown (expected 'softmax', 'mlp:<width>,<width>,...', 'cnn:<layers>', "
        "'cnn-fedavg', 'lenet5' or 'torchscript:FILE.pt'" +
        (file ? std::string("; a TorchScript file is named torchscript:") + std::string(spec)
              : std::string()) +
        ")");
  }
  std::string_view rest = spec.substr(kMlp.size());
  std::int64_t params = 0, prev = input_dim;
  for (;;) {
    std::size_t comma = rest.find(',');
    std::string_view field = rest.substr(0, comma);
    std::int64_t width = 0;
    auto [end, ec] = std::from_chars(field.data(), field.data() + field.size(), width);
    if (field.empty() || ec != std::errc() || end != field.data() + field.size())
      return Status::InvalidArgument(quoted + ": hidden width '" + std::string(field) + "' is not a number");
    if (width < 1 || width > kMaxHiddenWidth)
      return Status::InvalidArgument(quoted + ": hidden width " + std::to_string(width) + " outside [1, " +
                                     std::to_string(kMaxHiddenWidth) + "]");
    mlp.hidden.push_back(width);
    params += (prev + 1) * width;
    prev = width;
    if (params > kMaxParams) break;
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  params += (prev + 1) * num_classes;
  if (params > kMaxParams)
    return Status::InvalidArgument(quoted + ": more than " + std::to_string(kMaxParams) + " parameters");
  return std::unique_ptr<Model>(std::make_unique<Mlp>(mlp));
}

}  // namespace murmur::ml
