// A text file in the temporary directory, for the readers' tests.
#pragma once

#include <filesystem>
#include <fstream>
#include <string>

namespace murmur::sim {

// Writes `text` to TMPDIR/name and returns its path.
inline std::string WriteFile(const std::string& name, const std::string& text) {
  const auto path = std::filesystem::temp_directory_path() / name;
  std::ofstream(path) << text;
  return path.string();
}

}  // namespace murmur::sim
