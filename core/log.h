// Logging with levels to stderr.
//
//   MURMUR_LOG(kInfo) << "round " << r << " accuracy " << acc;
//
// Each statement writes one whole line ("I 11:24:07.123 gossip.cc:88] ...")
// under a lock, so lines from different threads never interleave. Statements
// below the current level cost one comparison. murmur writes its own ~80 lines
// here rather than pull in spdlog: stream syntax, no format-string dependency.
//
// Thread-safety: all functions are thread-safe.
#pragma once

#include <sstream>
#include <string_view>

namespace murmur {

enum class LogLevel { kDebug = 0, kInfo = 1, kWarning = 2, kError = 3, kOff = 4 };

void SetLogLevel(LogLevel level);
LogLevel GetLogLevel();
// Parses "debug", "info", "warning", "error" or "off"; false when unknown.
bool ParseLogLevel(std::string_view name, LogLevel* out);

namespace internal {
class LogLine {
 public:
  LogLine(LogLevel level, const char* file, int line);
  ~LogLine();
  LogLine(const LogLine&) = delete;
  LogLine& operator=(const LogLine&) = delete;
  std::ostream& stream() { return out_; }

 private:
  LogLevel level_;
  std::ostringstream out_;
};
struct LogVoidify {
  void operator&(std::ostream&) {}
};
}  // namespace internal

}  // namespace murmur

// The ternary form (as in glog) makes the macro one expression, safe in an
// unbraced if/else; LogVoidify turns the stream into void for the ternary.
#define MURMUR_LOG(level)                                 \
  !(::murmur::LogLevel::level >= ::murmur::GetLogLevel()) \
      ? (void)0                                           \
      : ::murmur::internal::LogVoidify() &                \
            ::murmur::internal::LogLine(::murmur::LogLevel::level, __FILE__, __LINE__).stream()
