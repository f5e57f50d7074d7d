#include "ml/text.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <vector>

#include "ml/dataset_spec.h"

namespace murmur::ml {

Result<Dataset> TextWindows(std::span<const std::uint8_t> bytes, std::int64_t context,
                            const std::string& name) {
  if (context < 1 || context > kMaxTextContext)
    return Status::InvalidArgument(name + ": context length " + std::to_string(context) + " is not in [1, " +
                                   std::to_string(kMaxTextContext) + "]");
  const auto n = static_cast<std::int64_t>(bytes.size());
  if (n > kMaxTextBytes)
    return Status::InvalidArgument(name + ": " + std::to_string(n) + " bytes, more than the " +
                                   std::to_string(kMaxTextBytes) + " accepted");
  if (n < context + 1)
    return Status::InvalidArgument(name + ": " + std::to_string(n) + " bytes, fewer than one window of " +
                                   std::to_string(context + 1) + " (context " + std::to_string(context) +
                                   " + 1)");
  const std::int64_t windows = (n - 1) / context;
  const std::int64_t width = context + 1;
  Dataset d;
  d.name = name;
  d.num_samples = windows;
  d.dim = width;
  d.shape = {width};
  d.num_classes = 256;
  d.type = SampleType::kTokens;
  d.pixels.resize(static_cast<std::size_t>(windows * width));
  d.labels.resize(static_cast<std::size_t>(windows));
  for (std::int64_t k = 0; k < windows; ++k) {
    const std::uint8_t* from = bytes.data() + k * context;
    std::copy(from, from + width, d.pixels.data() + k * width);
    d.labels[static_cast<std::size_t>(k)] = from[context];
  }
  return d;
}

Result<Dataset> ReadTextWindows(const std::string& path, std::int64_t context) {
  std::error_code error;
  const auto size = std::filesystem::file_size(path, error);
  if (error) return Status::NotFound("text file '" + path + "': " + error.message());
  if (size > static_cast<std::uintmax_t>(kMaxTextBytes))
    return Status::InvalidArgument("text file '" + path + "': " + std::to_string(size) +
                                   " bytes, more than the " + std::to_string(kMaxTextBytes) + " accepted");
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::NotFound("text file '" + path + "': cannot be opened");
  std::vector<std::uint8_t> bytes(static_cast<std::size_t>(size));
  in.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  if (in.gcount() != static_cast<std::streamsize>(bytes.size()))
    return Status::InvalidArgument("text file '" + path + "': could read only " +
                                   std::to_string(in.gcount()) + " of its " + std::to_string(size) +
                                   " bytes");
  return TextWindows(bytes, context, "text file '" + path + "'");
}

Result<TrainTest> LoadTextDataset(const std::string& rest) {
  const auto colon = rest.find(':');
  const std::string t = rest.substr(0, colon);
  char* end = nullptr;
  const long long context = std::strtoll(t.c_str(), &end, 10);
  if (colon == std::string::npos || t.empty() || *end != '\0' || context < 1 || context > kMaxTextContext)
    return Status::InvalidArgument("dataset 'text:" + rest +
                                   "': expected text:T:FILE[:TEST] with a context length T in [1, " +
                                   std::to_string(kMaxTextContext) + "]");
  std::string train_path = rest.substr(colon + 1), test_path;
  if (auto second = train_path.find(':'); second != std::string::npos) {
    test_path = train_path.substr(second + 1);
    train_path.resize(second);
  }
  TrainTest tt;
  MURMUR_ASSIGN_OR_RETURN(Dataset all, ReadTextWindows(train_path, context));
  all.name = "text:" + train_path;
  if (!test_path.empty()) {
    MURMUR_ASSIGN_OR_RETURN(tt.test, ReadTextWindows(test_path, context));
    tt.test.name = "text:" + test_path;
    tt.train = std::move(all);
    return tt;
  }
  if (all.num_samples < 2)
    return Status::InvalidArgument("text file '" + train_path + "': " + std::to_string(all.num_samples) +
                                   " window of context " + std::to_string(context) +
                                   "; holding out a test set needs at least 2");
  const std::int64_t test_n = std::max<std::int64_t>(1, all.num_samples / 10);
  std::vector<SampleIndex> order = AllIndices(all);
  const auto split = static_cast<std::size_t>(all.num_samples - test_n);
  tt.train = Subset(all, std::span(order).first(split));
  tt.test = Subset(all, std::span(order).subspan(split));
  return tt;
}

}  // namespace murmur::ml
