#include "ml/schedule.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <sstream>
#include <string>

#include "core/reduce.h"

namespace murmur::ml {

double LrSchedule::Base(std::int64_t t, std::int64_t span) const {
  const ScheduleOptions& o = options_;
  switch (o.kind) {
    case ScheduleKind::kConstant: return o.lr;
    case ScheduleKind::kStep: {
      std::int64_t size = std::max<std::int64_t>(1, o.step_size);
      return o.lr * IntPow(o.gamma, t / size);
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

Result<ScheduleOptions> ParseRoundSchedule(const std::string& spec, double lr, double lr_min,
                                           std::uint64_t rounds, std::uint64_t local_steps,
                                           const std::string& owner) {
  auto bad = [&](const std::string& why) {
    return Status::InvalidArgument(owner + " field 'lr_schedule' '" + spec + "' " + why);
  };
  ScheduleOptions o;
  o.lr = lr;
  o.total_steps = static_cast<std::int64_t>(rounds * local_steps);
  if (spec == "constant") return o;
  if (spec == "cosine") {
    if (!(lr_min >= 0) || !(lr_min <= lr))
      return Status::InvalidArgument(owner + " field 'lr_min' must be in [0, lr], got " +
                                     std::to_string(lr_min));
    o.kind = ScheduleKind::kCosine;
    o.min_lr = lr_min;
    return o;
  }
  if (spec.rfind("step:", 0) == 0) {
    std::istringstream in(spec.substr(5));
    std::uint64_t every = 0;
    char colon = 0;
    double factor = -1;
    if (!(in >> every >> colon >> factor) || colon != ':' || !in.eof())
      return bad("is not step:ROUNDS:FACTOR");
    if (every < 1) return bad("needs ROUNDS >= 1");
    if (!(factor > 0 && factor <= 1)) return bad("needs FACTOR in (0, 1]");
    o.kind = ScheduleKind::kStep;
    o.step_size = static_cast<std::int64_t>(every * local_steps);
    o.gamma = factor;
    return o;
  }
  return bad("is not constant, cosine or step:ROUNDS:FACTOR");
}

}  // namespace murmur::ml
