#include "core/check.h"

#include <cstdio>
#include <cstdlib>

namespace murmur::internal {

void CheckFailed(const char* cond, const char* file, int line, std::string_view msg) {
  std::fprintf(stderr, "murmur: check failed at %s:%d: %s", file, line, cond);
  if (!msg.empty()) std::fprintf(stderr, " (%.*s)", static_cast<int>(msg.size()), msg.data());
  std::fputc('\n', stderr);
  std::fflush(stderr);
  std::abort();
}

}  // namespace murmur::internal
