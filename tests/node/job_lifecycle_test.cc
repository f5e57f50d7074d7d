// The job lifecycle's state machine (node/job/lifecycle.h): its names are
// what status and DATA_DIR/job.state say, and its moves are exactly the
// table the header (and docs/daemon.md) give.
#include "node/job/lifecycle.h"

#include <doctest/doctest.h>

#include <set>
#include <string>
#include <utility>

namespace murmur::node {
namespace {

constexpr JobState kAll[] = {JobState::kIdle, JobState::kRunning, JobState::kDraining,
                             JobState::kDone, JobState::kStopped, JobState::kFailed};

TEST_CASE("Job states are named as status and job.state write them, and read back") {
  std::set<std::string> names;
  for (JobState s : kAll) {
    names.insert(JobStateName(s));
    REQUIRE(ParseJobState(JobStateName(s)).has_value());
    CHECK(*ParseJobState(JobStateName(s)) == s);
  }
  CHECK(names == std::set<std::string>{"idle", "running", "draining", "done", "stopped", "failed"});
  for (const char* bad : {"", "Running", "running\n", "prepared", "stoped"}) {
    CAPTURE(bad);
    CHECK_FALSE(ParseJobState(bad).has_value());
  }
}

TEST_CASE("The lifecycle moves only as its table says") {
  using S = JobState;
  // The table of node/job/lifecycle.h, written out pair by pair.
  const std::set<std::pair<S, S>> allowed = {
      {S::kIdle, S::kRunning},     {S::kDone, S::kRunning},  {S::kStopped, S::kRunning},
      {S::kFailed, S::kRunning},   {S::kIdle, S::kFailed},   {S::kDone, S::kFailed},
      {S::kStopped, S::kFailed},   {S::kFailed, S::kFailed}, {S::kRunning, S::kDraining},
      {S::kRunning, S::kDone},     {S::kDraining, S::kDone}, {S::kRunning, S::kStopped},
      {S::kDraining, S::kStopped},
  };
  for (S from : kAll) {
    for (S to : kAll) {
      CAPTURE(JobStateName(from));
      CAPTURE(JobStateName(to));
      CHECK(JobStateMayMove(from, to) == (allowed.count({from, to}) == 1));
    }
  }
  // A job's life: submitted, stopped by its operator, submitted again, completed.
  JobLifecycle life;
  CHECK(life.state() == S::kIdle);
  for (S next : {S::kRunning, S::kDraining, S::kStopped, S::kRunning, S::kDone}) {
    life.MoveTo(next);
    CHECK(life.state() == next);
  }
  CHECK(std::string(life.name()) == "done");
}

}  // namespace
}  // namespace murmur::node
