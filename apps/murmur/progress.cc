#include "apps/murmur/progress.h"

#include <unistd.h>

#include <cmath>

namespace murmur::cli {

std::string FormatSeconds(double s) {
  char buf[32];
  if (!std::isfinite(s)) return "?";
  if (s < 60) {
    std::snprintf(buf, sizeof(buf), "%.1fs", s);
  } else if (s < 3600) {
    std::snprintf(buf, sizeof(buf), "%dm%02ds", static_cast<int>(s) / 60, static_cast<int>(s) % 60);
  } else {
    std::snprintf(buf, sizeof(buf), "%dh%02dm", static_cast<int>(s) / 3600, (static_cast<int>(s) / 60) % 60);
  }
  return buf;
}

ProgressBar::ProgressBar(std::string label, std::uint64_t total, int plain_every_percent)
    : label_(std::move(label)),
      total_(total == 0 ? 1 : total),
      plain_every_(plain_every_percent),
      tty_(isatty(fileno(stderr)) != 0),
      start_(std::chrono::steady_clock::now()),
      last_draw_(start_ - std::chrono::seconds(1)) {}

double ProgressBar::elapsed_seconds() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

void ProgressBar::Update(std::uint64_t done, const std::string& status) {
  auto now = std::chrono::steady_clock::now();
  double frac = static_cast<double>(done) / static_cast<double>(total_);
  if (frac > 1) frac = 1;
  double elapsed = elapsed_seconds();
  double eta = frac > 0 ? elapsed * (1 - frac) / frac : NAN;
  int percent = static_cast<int>(frac * 100);
  if (tty_) {
    // Redraw at most ten times a second.
    if (now - last_draw_ < std::chrono::milliseconds(100) && done < total_) return;
    last_draw_ = now;
    constexpr int kWidth = 30;
    int filled = static_cast<int>(frac * kWidth);
    std::string bar(static_cast<std::size_t>(filled), '#');
    bar.append(static_cast<std::size_t>(kWidth - filled), '.');
    drawn_ = true;
    std::fprintf(stderr, "\r%s [%s] %3d%% %llu/%llu %s ETA %s  %s\x1b[K", label_.c_str(), bar.c_str(),
                 percent, static_cast<unsigned long long>(done), static_cast<unsigned long long>(total_),
                 FormatSeconds(elapsed).c_str(), FormatSeconds(eta).c_str(), status.c_str());
    std::fflush(stderr);
  } else {
    int bucket = plain_every_ > 0 ? percent / plain_every_ : percent;
    if (bucket == last_plain_percent_) return;
    last_plain_percent_ = bucket;
    std::fprintf(stderr, "%s %3d%% %llu/%llu elapsed %s ETA %s  %s\n", label_.c_str(), percent,
                 static_cast<unsigned long long>(done), static_cast<unsigned long long>(total_),
                 FormatSeconds(elapsed).c_str(), FormatSeconds(eta).c_str(), status.c_str());
  }
}

void ProgressBar::Abandon() {
  if (tty_ && drawn_) std::fputc('\n', stderr);
  drawn_ = false;
}

void ProgressBar::Finish(const std::string& status) {
  if (tty_) {
    last_draw_ = std::chrono::steady_clock::now() - std::chrono::seconds(1);
    Update(total_, status);
    std::fputc('\n', stderr);
  } else {
    std::fprintf(stderr, "%s done in %s  %s\n", label_.c_str(), FormatSeconds(elapsed_seconds()).c_str(),
                 status.c_str());
  }
}

}  // namespace murmur::cli
