#include "node/job/lifecycle.h"

#include <array>
#include <utility>

#include "core/check.h"

namespace murmur::node {

namespace {

constexpr std::array<std::pair<JobState, const char*>, 6> kNames = {{
    {JobState::kIdle, "idle"},
    {JobState::kRunning, "running"},
    {JobState::kDraining, "draining"},
    {JobState::kDone, "done"},
    {JobState::kStopped, "stopped"},
    {JobState::kFailed, "failed"},
}};

}  // namespace

const char* JobStateName(JobState state) {
  for (const auto& [s, name] : kNames)
    if (s == state) return name;
  return "unknown";
}

std::optional<JobState> ParseJobState(std::string_view name) {
  for (const auto& [s, n] : kNames)
    if (name == n) return s;
  return std::nullopt;
}

bool JobStateMayMove(JobState from, JobState to) {
  switch (to) {
    case JobState::kRunning:
    case JobState::kFailed:  // at rest: no job runs
      return from != JobState::kRunning && from != JobState::kDraining;
    case JobState::kDraining: return from == JobState::kRunning;
    case JobState::kDone:
    case JobState::kStopped: return from == JobState::kRunning || from == JobState::kDraining;
    case JobState::kIdle: return false;
  }
  return false;
}

void JobLifecycle::MoveTo(JobState to) {
  MURMUR_CHECK(JobStateMayMove(state_, to));
  state_ = to;
}

}  // namespace murmur::node
