#include "ml/schedule.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <string>

namespace murmur::ml {

double LrSchedule::Base(std::int64_t t, std::int64_t span) const {
  const ScheduleOptions& o = options_;
  switch (o.kind) {
    case ScheduleKind::kConstant: return o.lr;
    case ScheduleKind::kStep: {
      std::int64_t size = std::max<std::int64_t>(1, o.step_size);
      return o.lr * std::pow(o.gamma, static_cast<double>(t / size));
    }
    case ScheduleKind::kCosine: {
      double frac = span <= 0 ? 1.0 : std::min(1.0, static_cast<double>(t) / static_cast<double>(span));
      return o.min_lr + (o.lr - o.min_lr) * 0.5 * (1 + std::cos(std::numbers::pi * frac));
    }
  }
  return o.lr;
}

double LrSchedule::operator()(std::int64_t t) const {
  const ScheduleOptions& o = options_;
  if (t < 0) t = 0;
  if (t < o.warmup_steps)
    return Base(0, 1) * static_cast<double>(t + 1) / static_cast<double>(o.warmup_steps);
  return Base(t - o.warmup_steps, o.total_steps - o.warmup_steps);
}

Result<ScheduleKind> ParseScheduleKind(std::string_view name) {
  if (name == "constant") return ScheduleKind::kConstant;
  if (name == "step") return ScheduleKind::kStep;
  if (name == "cosine") return ScheduleKind::kCosine;
  return Status::InvalidArgument("schedule '" + std::string(name) +
                                 "' unknown (expected constant, step or cosine)");
}

}  // namespace murmur::ml
