// ProgressBar: progress with an ETA for long CLI jobs.
//
// On a terminal it redraws one line in place ("[#####.....] 52% 1040/2000
// 12.3s ETA 11.4s  acc 0.861"); when stderr is not a terminal (CI, pipes,
// log files) it prints a plain line every `plain_every` percent instead, so
// logs stay readable. Output goes to stderr; results go to stdout.
//
// Thread-safety: none; call from the thread that drives the job.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

namespace murmur::cli {

class ProgressBar {
 public:
  ProgressBar(std::string label, std::uint64_t total, int plain_every_percent = 10);
  // Reports `done` of `total` units, with a short status such as "acc 0.861".
  void Update(std::uint64_t done, const std::string& status = "");
  // Ends the line (terminal) and prints the elapsed time.
  void Finish(const std::string& status = "");
  // For a job that failed: ends a line drawn on a terminal so that the
  // error starts on its own, and claims nothing was done.
  void Abandon();

  double elapsed_seconds() const;

 private:
  std::string label_;
  std::uint64_t total_;
  int plain_every_;
  int last_plain_percent_ = -1;
  bool tty_;
  bool drawn_ = false;  // a line was drawn on the terminal
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_draw_;
};

// "1m05s", "12.3s".
std::string FormatSeconds(double seconds);

}  // namespace murmur::cli
