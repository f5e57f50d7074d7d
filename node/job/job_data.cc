#include "node/job/job_data.h"

#include <algorithm>
#include <filesystem>

#include "engine/model_factory.h"
#include "ml/dataset_spec.h"

namespace murmur::node {

namespace {

constexpr const char* kNamedPrefix = "fashion-mnist:";
constexpr const char* kPartKey = ":part=";
constexpr std::size_t kMaxParts = 100000;

// "fashion-mnist:PARTITION:part=I/N".
struct NamedPartition {
  std::string partition;
  std::size_t part = 0, parts = 1;
};

bool IsNamedPartition(const std::string& data) {
  return data.rfind(kNamedPrefix, 0) == 0 && data.find(kPartKey) != std::string::npos;
}

Result<std::size_t> ParseCount(const std::string& data, const std::string& text) {
  if (text.empty() || text.size() > 9 || text.find_first_not_of("0123456789") != std::string::npos)
    return Status::InvalidArgument("config field 'data': '" + data + "': '" + text + "' is not a number");
  return static_cast<std::size_t>(std::stoul(text));
}

Result<NamedPartition> ParseNamedPartition(const std::string& data) {
  const std::size_t prefix = std::string(kNamedPrefix).size();
  const std::size_t key = data.rfind(kPartKey);
  NamedPartition out;
  out.partition = data.substr(prefix, key - std::min(key, prefix));
  const std::string part = data.substr(key + std::string(kPartKey).size());
  const std::size_t slash = part.find('/');
  if (key < prefix || slash == std::string::npos)
    return Status::InvalidArgument("config field 'data': '" + data +
                                   "' is not fashion-mnist:PARTITION:part=I/N");
  MURMUR_ASSIGN_OR_RETURN(out.part, ParseCount(data, part.substr(0, slash)));
  MURMUR_ASSIGN_OR_RETURN(out.parts, ParseCount(data, part.substr(slash + 1)));
  if (out.parts < 1 || out.parts > kMaxParts || out.part >= out.parts)
    return Status::InvalidArgument("config field 'data': '" + data +
                                   "': part I/N needs 0 <= I < N <= " + std::to_string(kMaxParts));
  MURMUR_RETURN_IF_ERROR(ml::CheckPartitionSpec(out.partition).WithContext("config field 'data'"));
  return out;
}

}  // namespace

LocalData LocalDataOf(const proto::NodeConfig& config) {
  return {config.data(), config.dataset_dir(), config.data_dir(), config.data_dir() + "/artifacts"};
}

Status CheckLocalData(const std::string& data) {
  if (IsNamedPartition(data)) return ParseNamedPartition(data).status();
  return Status::Ok();  // a directory or a dataset spec: checked when loaded
}

Result<JobData> LoadJobData(const proto::JobConfig& job, const LocalData& local, std::size_t num_nodes,
                            std::size_t index, bool train) {
  const std::string dir = local.dataset_dir.empty() ? job.spec().data_dir() : local.dataset_dir;
  Result<ml::TrainTest> data = Status::Internal("no data");
  if (local.data.empty()) {
    data = ml::LoadDatasetShard(job.spec().dataset(), dir, job.spec().seed(),
                                ml::ShardSpec{job.spec().partition(), num_nodes, index, train});
    if (!data.ok()) return data.status().WithContext("spec field 'dataset'");
  } else if (IsNamedPartition(local.data)) {
    MURMUR_ASSIGN_OR_RETURN(NamedPartition named, ParseNamedPartition(local.data));
    data = ml::LoadDatasetShard("fashion-mnist", dir, job.spec().seed(),
                                ml::ShardSpec{named.partition, named.parts, named.part, train});
  } else if (std::filesystem::is_directory(local.data)) {
    data = ml::LoadDatasetShard("fashion-mnist", local.data, job.spec().seed(),
                                ml::ShardSpec{"iid", 1, 0, train});
  } else if (local.data.rfind("csv:", 0) != 0 && local.data.size() > 4 &&
             local.data.compare(local.data.size() - 4, 4, ".csv") == 0) {
    data =
        ml::LoadDatasetShard("csv:" + local.data, dir, job.spec().seed(), ml::ShardSpec{"iid", 1, 0, train});
  } else {
    data = ml::LoadDatasetShard(local.data, dir, job.spec().seed(), ml::ShardSpec{"iid", 1, 0, train});
  }
  if (!data.ok()) return data.status().WithContext("config field 'data'");
  JobData out;
  out.data = std::move(data).value();
  if (train && out.data.train.num_samples == 0)
    return Status::InvalidArgument("node " + std::to_string(index) + " of " + std::to_string(num_nodes) +
                                   " has no training samples");
  out.samples = ml::AllIndices(out.data.train);
  auto model = engine::MakeJobModel(job.spec(), out.data.train.sample_shape(), out.data.train.num_classes,
                                    local.model_dir, /*require_hash=*/true, local.artifact_dir);
  if (!model.ok()) return model.status().WithContext("spec field 'model'");
  MURMUR_RETURN_IF_ERROR(
      engine::CheckModelForData(**model, out.data.train).WithContext("spec field 'model'"));
  out.model = std::move(model).value();
  return out;
}

Result<std::size_t> LargestShard(const proto::JobConfig& job, std::size_t num_nodes) {
  auto partition = ml::PartitionOfSpec(job.spec().dataset(), job.spec().data_dir(), job.spec().seed(),
                                       job.spec().partition(), num_nodes);
  if (!partition.ok()) return partition.status().WithContext("spec fields 'dataset' and 'partition'");
  std::size_t largest = 1;
  for (std::size_t i = 0; i < num_nodes; ++i) largest = std::max(largest, partition->node(i).size());
  return largest;
}

}  // namespace murmur::node
