#include "core/log.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <mutex>

namespace murmur {

namespace {
std::atomic<int> g_level{static_cast<int>(LogLevel::kInfo)};
std::mutex g_write_mu;

const char* Basename(const char* path) {
  const char* base = path;
  for (const char* p = path; *p; ++p) {
    if (*p == '/') base = p + 1;
  }
  return base;
}
}  // namespace

void SetLogLevel(LogLevel level) { g_level.store(static_cast<int>(level)); }
LogLevel GetLogLevel() { return static_cast<LogLevel>(g_level.load(std::memory_order_relaxed)); }

bool ParseLogLevel(std::string_view name, LogLevel* out) {
  static constexpr std::pair<std::string_view, LogLevel> kNames[] = {{"debug", LogLevel::kDebug},
                                                                     {"info", LogLevel::kInfo},
                                                                     {"warning", LogLevel::kWarning},
                                                                     {"error", LogLevel::kError},
                                                                     {"off", LogLevel::kOff}};
  for (const auto& [n, l] : kNames) {
    if (n == name) {
      *out = l;
      return true;
    }
  }
  return false;
}

namespace internal {

LogLine::LogLine(LogLevel level, const char* file, int line) : level_(level) {
  using namespace std::chrono;
  auto now = system_clock::now();
  std::time_t t = system_clock::to_time_t(now);
  std::tm tm{};
  localtime_r(&t, &tm);
  auto ms = duration_cast<milliseconds>(now.time_since_epoch()).count() % 1000;
  static constexpr char kLetters[] = {'D', 'I', 'W', 'E', 'O'};
  char head[64];
  std::snprintf(head, sizeof(head), "%c %02d:%02d:%02d.%03d ", kLetters[static_cast<int>(level)], tm.tm_hour,
                tm.tm_min, tm.tm_sec, static_cast<int>(ms));
  out_ << head << Basename(file) << ':' << line << "] ";
}

LogLine::~LogLine() {
  out_ << '\n';
  std::string s = out_.str();
  std::lock_guard<std::mutex> lock(g_write_mu);
  std::fwrite(s.data(), 1, s.size(), stderr);
  if (level_ >= LogLevel::kError) std::fflush(stderr);
}

}  // namespace internal
}  // namespace murmur
