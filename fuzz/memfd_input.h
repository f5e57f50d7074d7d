// A fuzzer's input as a file, for readers that take a path: an in-memory
// file (memfd_create) named /proc/self/fd/N, closed when this goes.
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string>

class MemFdInput {
 public:
  MemFdInput(const char* name, const std::uint8_t* data, std::size_t size) : fd_(memfd_create(name, 0)) {
    if (fd_ >= 0 && write(fd_, data, size) == static_cast<ssize_t>(size))
      path_ = "/proc/self/fd/" + std::to_string(fd_);
  }
  ~MemFdInput() {
    if (fd_ >= 0) close(fd_);
  }
  MemFdInput(const MemFdInput&) = delete;
  MemFdInput& operator=(const MemFdInput&) = delete;

  // Empty when the file could not be made.
  const std::string& path() const { return path_; }

 private:
  int fd_;
  std::string path_;
};
