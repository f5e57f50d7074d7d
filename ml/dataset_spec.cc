#include "ml/dataset_spec.h"

#include <algorithm>

#include "core/rng.h"
#include "ml/csv.h"
#include "ml/idx.h"
#include "ml/synthetic.h"

namespace murmur::ml {

Dataset Subset(const Dataset& data, std::span<const SampleIndex> indices) {
  Dataset out;
  out.name = data.name;
  out.dim = data.dim;
  out.num_classes = data.num_classes;
  out.num_samples = static_cast<std::int64_t>(indices.size());
  out.features.resize(indices.size() * static_cast<std::size_t>(data.dim));
  out.labels.resize(indices.size());
  for (std::size_t k = 0; k < indices.size(); ++k) {
    std::copy_n(data.row(indices[k]), data.dim, out.features.data() + k * static_cast<std::size_t>(data.dim));
    out.labels[k] = data.labels[indices[k]];
  }
  return out;
}

Result<TrainTest> LoadDatasetSpec(const std::string& spec, const std::string& data_dir, std::uint64_t seed) {
  if (spec == "fashion-mnist") return LoadFashionMnist(data_dir);
  if (spec == "synthetic:blobs") {
    BlobsOptions o;
    o.seed = seed;
    o.num_samples = 20000;
    TrainTest tt;
    tt.train = MakeGaussianBlobs(o);
    o.stream = 1;
    o.num_samples = 5000;
    tt.test = MakeGaussianBlobs(o);
    return tt;
  }
  if (spec == "synthetic:teacher") {
    TeacherOptions o;
    o.seed = seed;
    o.num_samples = 20000;
    TrainTest tt;
    tt.train = MakeLinearTeacher(o);
    o.stream = 1;
    o.num_samples = 5000;
    tt.test = MakeLinearTeacher(o);
    return tt;
  }
  if (spec.rfind("csv:", 0) == 0) {
    std::string rest = spec.substr(4);
    std::string test_path;
    if (auto colon = rest.find(':'); colon != std::string::npos) {
      test_path = rest.substr(colon + 1);
      rest = rest.substr(0, colon);
    }
    MURMUR_ASSIGN_OR_RETURN(Dataset all, ReadCsv(rest));
    TrainTest tt;
    if (!test_path.empty()) {
      CsvOptions o;
      o.num_classes = all.num_classes;
      MURMUR_ASSIGN_OR_RETURN(tt.test, ReadCsv(test_path, o));
      if (tt.test.dim != all.dim) {
        return Status::InvalidArgument(test_path + ": " + std::to_string(tt.test.dim) +
                                       " features, training data has " + std::to_string(all.dim));
      }
      tt.train = std::move(all);
      return tt;
    }
    // Hold out 20% by a seeded permutation.
    std::vector<SampleIndex> order = AllIndices(all);
    Rng rng(seed, 0, RngPurpose::kPartition);
    rng.Shuffle(std::span<SampleIndex>(order));
    std::size_t test_n = std::max<std::size_t>(1, order.size() / 5);
    if (order.size() < 2)
      return Status::InvalidArgument(rest + ": need at least 2 rows to hold out a test set");
    tt.test = Subset(all, std::span(order).first(test_n));
    tt.train = Subset(all, std::span(order).subspan(test_n));
    return tt;
  }
  return Status::InvalidArgument("dataset '" + spec +
                                 "' unknown (expected fashion-mnist, csv:TRAIN[:TEST], synthetic:blobs or "
                                 "synthetic:teacher)");
}

}  // namespace murmur::ml
