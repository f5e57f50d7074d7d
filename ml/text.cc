#include "ml/text.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <vector>

namespace murmur::ml {

namespace {

// The number of windows of n bytes with context `context`, or why there are none.
Result<std::int64_t> WindowCount(std::int64_t n, std::int64_t context, const std::string& name) {
  if (context < 1 || context > kMaxTextContext)
    return Status::InvalidArgument(name + ": context length " + std::to_string(context) + " is not in [1, " +
                                   std::to_string(kMaxTextContext) + "]");
  if (n > kMaxTextBytes)
    return Status::InvalidArgument(name + ": " + std::to_string(n) + " bytes, more than the " +
                                   std::to_string(kMaxTextBytes) + " accepted");
  if (n < context + 1)
    return Status::InvalidArgument(name + ": " + std::to_string(n) + " bytes, fewer than one window of " +
                                   std::to_string(context + 1) + " (context " + std::to_string(context) +
                                   " + 1)");
  return (n - 1) / context;
}

// The bytes of the file at `path`, at most kMaxTextBytes.
Result<std::vector<std::uint8_t>> ReadTextFile(const std::string& path) {
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
  return bytes;
}

}  // namespace

Result<Dataset> TextWindows(std::span<const std::uint8_t> bytes, std::int64_t context,
                            const std::string& name) {
  MURMUR_ASSIGN_OR_RETURN(const std::int64_t windows,
                          WindowCount(static_cast<std::int64_t>(bytes.size()), context, name));
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
  MURMUR_ASSIGN_OR_RETURN(std::vector<std::uint8_t> bytes, ReadTextFile(path));
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
  const std::string name = "text file '" + train_path + "'";
  MURMUR_ASSIGN_OR_RETURN(std::vector<std::uint8_t> bytes, ReadTextFile(train_path));
  const std::span<const std::uint8_t> text(bytes);
  TrainTest tt;
  if (!test_path.empty()) {
    MURMUR_ASSIGN_OR_RETURN(tt.train, TextWindows(text, context, name));
    MURMUR_ASSIGN_OR_RETURN(tt.test, ReadTextWindows(test_path, context));
  } else {
    MURMUR_ASSIGN_OR_RETURN(const std::int64_t windows,
                            WindowCount(static_cast<std::int64_t>(text.size()), context, name));
    if (windows < 2)
      return Status::InvalidArgument(name + ": " + std::to_string(windows) + " window of context " +
                                     std::to_string(context) + "; holding out a test set needs at least 2");
    // The last tenth of the windows, cut from the bytes where they start:
    // the training windows end on the test text's first byte.
    const auto split =
        static_cast<std::size_t>((windows - std::max<std::int64_t>(1, windows / 10)) * context);
    MURMUR_ASSIGN_OR_RETURN(tt.train, TextWindows(text.first(split + 1), context, name));
    MURMUR_ASSIGN_OR_RETURN(tt.test, TextWindows(text.subspan(split), context, name));
  }
  tt.train.name = "text:" + train_path;
  tt.test.name = "text:" + (test_path.empty() ? train_path : test_path);
  return tt;
}

}  // namespace murmur::ml
