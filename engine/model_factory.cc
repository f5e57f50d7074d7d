#include "engine/model_factory.h"

#include <filesystem>

#include "crypto/bytes.h"
#include "crypto/file_io.h"
#include "crypto/hmac.h"
#include "ml/torch/torchscript_model.h"

namespace murmur::engine {
Result<std::unique_ptr<ml::Model>> MakeModel(std::string_view spec,
                                             std::span<const std::int64_t> sample_shape, int num_classes,
                                             const ml::ModelSpecOptions& options) {
  if (ml::IsTorchScriptSpec(spec)) return ml::LoadTorchScriptModel(spec, sample_shape, num_classes);
  return ml::MakeModel(spec, sample_shape, num_classes, options);
}

Status CheckModelForData(const ml::Model& model, const ml::Dataset& train) {
  if (train.type != ml::SampleType::kTokens || model.ReturnsOwnLoss()) return Status::Ok();
  return Status::InvalidArgument(
      "model '" + model.spec() + "' reads each sample and predicts its label, but a text window's label is " +
      "its own last byte, which the model would read as input: on text:T:FILE train a TorchScript model " +
      "whose forward(x, y) returns its next-byte loss (docs/torchscript.md, \"Sequence models\"; "
      "examples/lm)");
}

Result<std::string> ModelFileBlake2b(const std::string& path) {
  auto bytes = crypto::ReadSmallFile(path, ml::kMaxTorchScriptFileBytes);
  if (!bytes.ok()) return bytes.status().WithContext("model file '" + path + "'");
  return crypto::ToHex(crypto::Blake2b({crypto::AsBytes(*bytes)}));
}

Result<std::unique_ptr<ml::Model>> MakeJobModel(const proto::JobSpec& spec,
                                                std::span<const std::int64_t> sample_shape, int num_classes,
                                                const std::string& model_dir, bool require_hash,
                                                const std::string& artifact_dir) {
  if (!ml::IsTorchScriptSpec(spec.model())) return MakeModel(spec.model(), sample_shape, num_classes);
  MURMUR_ASSIGN_OR_RETURN(std::string path, ml::TorchScriptPath(spec.model()));
  std::error_code ec;
  const std::filesystem::path stored = std::filesystem::path(artifact_dir) / spec.model_blake2b();
  if (!artifact_dir.empty() && !spec.model_blake2b().empty() && std::filesystem::is_regular_file(stored, ec))
    path = stored.string();
  else if (!model_dir.empty() && std::filesystem::path(path).is_relative())
    path = (std::filesystem::path(model_dir) / path).string();
  if (spec.model_blake2b().empty()) {
    if (require_hash)
      return Status::InvalidArgument(
          "spec field 'model_blake2b' is required for a TorchScript model on murmurd, so that every daemon "
          "trains the same file (b2sum FILE prints it)");
  } else {
    MURMUR_ASSIGN_OR_RETURN(std::string have, ModelFileBlake2b(path));
    if (have != spec.model_blake2b())
      return Status::FailedPrecondition(
          "model file '" + path + "' has BLAKE2b " + have + " but the job's spec field 'model_blake2b' is " +
          spec.model_blake2b() +
          "; copy the job's model file there, or submit the job with murmur job "
          "submit from where the file is (docs/daemon.md \"Artifacts\")");
  }
  return ml::LoadTorchScriptModel(std::string(ml::kTorchScriptPrefix) + path, sample_shape, num_classes);
}

Status CheckModelSpec(std::string_view spec) {
  if (ml::IsTorchScriptSpec(spec)) return ml::CheckTorchScriptModel(spec);
  return ml::CheckModelSpec(spec);
}

}  // namespace murmur::engine
