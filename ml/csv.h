// CSV datasets: one sample per line, a label column plus numeric features.
//
// Fields are separated by commas (spaces around a field are ignored); the
// label column holds a non-negative integer class. A header line is optional:
// by default the first line is a header when any of its fields is not a
// number. Features are read as given (no scaling). The file is untrusted:
// ragged rows, non-numeric fields, fractional or negative labels and overlong
// lines get a Status naming the file and the line number.
//
// Thread-safety: free functions without shared state.
#pragma once

#include <cstdint>
#include <string>

#include "core/status.h"
#include "ml/dataset.h"

namespace murmur::ml {

struct CsvOptions {
  enum class Header { kAuto, kPresent, kAbsent };
  Header header = Header::kAuto;
  int label_column = 0;                             // 0-based column of the label
  int num_classes = 0;                              // 0: one more than the largest label seen
  std::size_t max_line = 1 << 20;                   // longest line accepted, in bytes
  std::int64_t max_values = std::int64_t{1} << 28;  // features accepted in all (1 GiB of floats)
};

Result<Dataset> ReadCsv(const std::string& path, const CsvOptions& options = {});

}  // namespace murmur::ml
