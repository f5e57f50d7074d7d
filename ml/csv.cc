#include "ml/csv.h"

#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string_view>
#include <vector>

namespace murmur::ml {
namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

void SplitFields(std::string_view line, std::vector<std::string_view>& fields) {
  fields.clear();
  for (;;) {
    std::size_t comma = line.find(',');
    fields.push_back(Trim(line.substr(0, comma)));
    if (comma == std::string_view::npos) return;
    line.remove_prefix(comma + 1);
  }
}

bool ParseFloat(std::string_view s, float* out) {
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && end == s.data() + s.size() && !s.empty() && std::isfinite(*out);
}

}  // namespace

Result<Dataset> ReadCsv(const std::string& path, const CsvOptions& options) {
  if (!std::filesystem::exists(path)) return Status::NotFound(path + ": no such file");
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::NotFound(path + ": cannot open");
  Dataset ds;
  ds.name = path;
  std::vector<std::string_view> fields;
  std::string line;
  std::int64_t line_no = 0;
  std::size_t columns = 0;
  int max_label = -1;
  auto where = [&] { return path + ":" + std::to_string(line_no) + ": "; };
  while (std::getline(in, line)) {
    ++line_no;
    if (line.size() > options.max_line)
      return Status::InvalidArgument(where() + "line of " + std::to_string(line.size()) +
                                     " bytes over the limit of " + std::to_string(options.max_line));
    if (Trim(line).empty()) continue;
    SplitFields(line, fields);
    if (columns == 0) {
      columns = fields.size();
      if (columns < 2) return Status::InvalidArgument(where() + "need a label and at least one feature");
      if (options.label_column < 0 || static_cast<std::size_t>(options.label_column) >= columns)
        return Status::InvalidArgument(where() + "label column " + std::to_string(options.label_column) +
                                       " but only " + std::to_string(columns) + " columns");
      ds.dim = static_cast<std::int64_t>(columns) - 1;
      bool header = options.header == CsvOptions::Header::kPresent;
      if (options.header == CsvOptions::Header::kAuto) {
        float v;
        for (std::string_view f : fields) header = header || !ParseFloat(f, &v);
      }
      if (header) continue;
    }
    if (fields.size() != columns)
      return Status::InvalidArgument(where() + std::to_string(fields.size()) + " fields, expected " +
                                     std::to_string(columns));
    if (static_cast<std::int64_t>(ds.features.size()) + ds.dim > options.max_values)
      return Status::ResourceExhausted(where() + "more than " + std::to_string(options.max_values) +
                                       " feature values");
    for (std::size_t c = 0; c < columns; ++c) {
      float v;
      if (!ParseFloat(fields[c], &v))
        return Status::InvalidArgument(where() + "field " + std::to_string(c + 1) + " '" +
                                       std::string(fields[c].substr(0, 32)) + "' is not a number");
      if (static_cast<int>(c) == options.label_column) {
        if (v < 0 || v != std::floor(v) || v >= static_cast<float>(kMaxClasses))
          return Status::InvalidArgument(where() + "label '" + std::string(fields[c]) +
                                         "' is not a class number in [0, " + std::to_string(kMaxClasses - 1) +
                                         "]");
        int y = static_cast<int>(v);
        if (options.num_classes > 0 && y >= options.num_classes)
          return Status::InvalidArgument(where() + "label " + std::to_string(y) + " outside [0, " +
                                         std::to_string(options.num_classes) + ")");
        max_label = std::max(max_label, y);
        ds.labels.push_back(y);
      } else {
        ds.features.push_back(v);
      }
    }
  }
  if (in.bad()) return Status::DataLoss(path + ": read error after line " + std::to_string(line_no));
  if (ds.labels.empty()) return Status::InvalidArgument(path + ": no samples");
  ds.num_samples = static_cast<std::int64_t>(ds.labels.size());
  ds.num_classes = options.num_classes > 0 ? options.num_classes : max_label + 1;
  MURMUR_RETURN_IF_ERROR(ds.Validate());
  return ds;
}

}  // namespace murmur::ml
