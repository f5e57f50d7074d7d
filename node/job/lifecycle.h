// A job's lifecycle on a daemon as an explicit state machine: the states a
// daemon reports (`murmur job status`, ControlResponse.job.state) and keeps
// in DATA_DIR/job.state, and the transitions between them, in one place.
//
//   idle      no job yet (a new daemon)
//   running   a job runs (submitted, committed, resumed at start, or the config's)
//   draining  it stops after its current round (an operator's stop, SIGTERM)
//   done      it completed its rounds
//   stopped   it ended before its last round (drained or abandoned)
//   failed    a submitted job did not start on an idle daemon
//
// Allowed moves (anything else is a bug in the daemon: MURMUR_CHECK):
//
//   idle, done, stopped, failed -> running    a job starts (a new one, or again)
//   idle, done, stopped, failed -> failed     a submission did not start where
//                                             no last job is kept to show
//   running                     -> draining   a stop
//   running, draining           -> done       the job completed
//   running, draining           -> stopped    the job ended early
//
// A prepared job (two-phase submit) is held beside the lifecycle, not in it:
// the last job's status stays what it was until the commit starts the new
// one. A shutdown that only stops the process leaves the state running (on
// disk as well), so that the next start resumes the job.
//
// Thread-safety: a value; the daemon reads and moves it on its io thread.
#pragma once

#include <optional>
#include <string_view>

namespace murmur::node {

enum class JobState { kIdle, kRunning, kDraining, kDone, kStopped, kFailed };

// "idle", "running", "draining", "done", "stopped", "failed".
const char* JobStateName(JobState state);
// The state a name says (as JobStateName writes it), or nullopt.
std::optional<JobState> ParseJobState(std::string_view name);
// Whether the lifecycle may move from `from` to `to` (the table above).
bool JobStateMayMove(JobState from, JobState to);

class JobLifecycle {
 public:
  JobState state() const { return state_; }
  const char* name() const { return JobStateName(state_); }
  // REQUIRES: JobStateMayMove(state(), to).
  void MoveTo(JobState to);
  // A state read back from DATA_DIR/job.state at start (any state).
  void Restore(JobState state) { state_ = state; }

 private:
  JobState state_ = JobState::kIdle;
};

}  // namespace murmur::node
