// Learning-rate schedules: the step size as a function of the step number.
//
//   constant  lr
//   step      lr * gamma^floor(t / step_size)                (Goyal et al. 2017 style decay)
//   cosine    min_lr + (lr - min_lr) (1 + cos(pi t / T)) / 2  (Loshchilov and Hutter 2017, SGDR
//             without restarts), T = total_steps
//   warm-up   composes with any of them: for t < warmup_steps the rate rises
//             linearly, lr_warm(t) = base(warmup) * (t + 1) / warmup_steps
//             (Goyal et al. 2017), and the base schedule then runs on
//             t - warmup_steps over T - warmup_steps steps.
//
// t counts optimizer steps from 0. Thread-safety: a value; const methods.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/status.h"

namespace murmur::ml {

enum class ScheduleKind { kConstant, kStep, kCosine };

struct ScheduleOptions {
  ScheduleKind kind = ScheduleKind::kConstant;
  double lr = 0.1;
  std::int64_t total_steps = 1;  // T, for cosine
  std::int64_t warmup_steps = 0;
  std::int64_t step_size = 1;  // for step: steps between decays
  double gamma = 0.1;          // for step: factor per decay
  double min_lr = 0;           // for cosine: the final rate
};

class LrSchedule {
 public:
  explicit LrSchedule(ScheduleOptions options) : options_(options) {}
  // The learning rate of step t (t >= 0).
  double operator()(std::int64_t t) const;
  const ScheduleOptions& options() const { return options_; }

 private:
  double Base(std::int64_t t, std::int64_t span) const;
  ScheduleOptions options_;
};

// "constant", "step" or "cosine".
Result<ScheduleKind> ParseScheduleKind(std::string_view name);

// A gossip node's schedule from the fields lr_schedule ("constant", "cosine"
// from lr down to lr_min, or "step:ROUNDS:FACTOR": times FACTOR every ROUNDS
// rounds) and lr_min, with the horizon in local steps (rounds x local_steps).
// Errors name the field as `owner` field 'lr_schedule' / 'lr_min', owner
// being "scenario" or "job".
Result<ScheduleOptions> ParseRoundSchedule(const std::string& spec, double lr, double lr_min,
                                           std::uint64_t rounds, std::uint64_t local_steps,
                                           const std::string& owner);

}  // namespace murmur::ml
