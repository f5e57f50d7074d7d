// Learning-rate schedules at hand-computed points.
#include <doctest/doctest.h>

#include <cmath>
#include <numbers>

#include "ml/schedule.h"

namespace murmur::ml {

TEST_CASE("constant and step schedules") {
  LrSchedule constant(ScheduleOptions{ScheduleKind::kConstant, 0.3});
  CHECK(constant(0) == 0.3);
  CHECK(constant(1000) == 0.3);
  ScheduleOptions o{ScheduleKind::kStep, 0.8};
  o.step_size = 10;
  o.gamma = 0.5;
  LrSchedule step(o);
  CHECK(step(0) == doctest::Approx(0.8));
  CHECK(step(9) == doctest::Approx(0.8));
  CHECK(step(10) == doctest::Approx(0.4));
  CHECK(step(25) == doctest::Approx(0.2));
}

TEST_CASE("cosine schedule: lr at 0, midpoint at T/2, min_lr at T, and a quarter point") {
  ScheduleOptions o{ScheduleKind::kCosine, 1.0};
  o.total_steps = 100;
  o.min_lr = 0.1;
  LrSchedule cosine(o);
  CHECK(cosine(0) == doctest::Approx(1.0));
  CHECK(cosine(50) == doctest::Approx(0.55));
  CHECK(cosine(25) == doctest::Approx(0.1 + 0.9 * (1 + std::cos(std::numbers::pi / 4)) / 2));
  CHECK(cosine(100) == doctest::Approx(0.1));
  CHECK(cosine(500) == doctest::Approx(0.1));
}

TEST_CASE("linear warm-up composes with cosine") {
  ScheduleOptions o{ScheduleKind::kCosine, 0.4};
  o.total_steps = 110;
  o.warmup_steps = 10;
  LrSchedule s(o);
  CHECK(s(0) == doctest::Approx(0.04));
  CHECK(s(4) == doctest::Approx(0.2));
  CHECK(s(9) == doctest::Approx(0.4));
  CHECK(s(10) == doctest::Approx(0.4));  // cosine starts after warm-up
  CHECK(s(60) == doctest::Approx(0.2));  // half-way through the remaining 100 steps
  CHECK(s(110) == doctest::Approx(0.0));
}

TEST_CASE("ParseScheduleKind") {
  CHECK(*ParseScheduleKind("cosine") == ScheduleKind::kCosine);
  CHECK(*ParseScheduleKind("step") == ScheduleKind::kStep);
  CHECK(ParseScheduleKind("linear").status().code() == StatusCode::kInvalidArgument);
}

}  // namespace murmur::ml
