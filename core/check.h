// MURMUR_CHECK: invariants of murmur's own code.
//
// A failed check is a bug in murmur, never a reaction to bad input (bad input
// gets a Status, see core/status.h). It prints the condition, file and line to
// stderr and aborts. Checks stay on in release builds: they guard memory safety.
#pragma once

#include <string_view>

namespace murmur::internal {
[[noreturn]] void CheckFailed(const char* cond, const char* file, int line, std::string_view msg);
}  // namespace murmur::internal

#define MURMUR_CHECK(cond)                                                            \
  do {                                                                                \
    if (!(cond)) [[unlikely]]                                                         \
      ::murmur::internal::CheckFailed(#cond, __FILE__, __LINE__, std::string_view{}); \
  } while (0)

// As MURMUR_CHECK, with a message (anything convertible to std::string_view).
#define MURMUR_CHECK_MSG(cond, msg)                                      \
  do {                                                                   \
    if (!(cond)) [[unlikely]]                                            \
      ::murmur::internal::CheckFailed(#cond, __FILE__, __LINE__, (msg)); \
  } while (0)
