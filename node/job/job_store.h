// JobStore: where a daemon keeps its jobs on disk (docs/daemon.md, "Data
// directory"). Each job has its own checkpoint, DATA_DIR/jobs/JOB_ID/
// checkpoint.bin, so that a job never resumes from another's (a checkpoint
// also records its job's id and tag, node/job/checkpoint.h, for a job
// submitted again under its id with another configuration). The jobs that
// completed are listed in DATA_DIR/jobs/completed, "JOB_ID ROUNDS" a line, the last
// kMaxCompletedRecord of them: a completed job id is not run again. The
// checkpoints (final models) of the last kMaxKeptCheckpoints completed jobs
// are kept; older ones are removed when a job completes.
//
// A job may be continued: submitted again with more rounds it goes on from
// its checkpoint (OwnerTag leaves the round count out), also once it
// completed; with the same or fewer rounds a completed job is refused. A
// job whose state does not depend on its graph (engine::StateFollowsGraph:
// all but CHOCO) may also be submitted again with another topology, and
// goes on from its checkpoint on the new graph: how a job follows links
// that changed (stop it, submit it again, murmur job submit choosing the
// link-aware graph anew).
//
// A data directory of murmurd 0.1 kept one DATA_DIR/checkpoint.bin for the
// last job: Open moves it to that job's place (`last_job_id`).
//
// Thread-safety: one thread (the daemon's io thread). Writes are atomic
// (crypto::WriteFileAtomic).
#pragma once

#include <cstddef>
#include <deque>
#include <string>

#include "core/status.h"
#include "proto/node.pb.h"

namespace murmur::node {

// The owner tag a job's checkpoint records (node/job/checkpoint.h): the job's
// JobTag with spec.rounds left out, and spec.topology too unless the state
// follows the graph, so that a job continued with more rounds (or on
// another graph) takes its checkpoint and any other change of its
// configuration does not.
std::uint64_t OwnerTag(const proto::JobConfig& job);

inline constexpr std::size_t kMaxCompletedRecord = 1000;
inline constexpr std::size_t kMaxKeptCheckpoints = 16;

class JobStore {
 public:
  // Reads the record of completed jobs; `last_job_id` (may be empty) is the
  // job of a 0.1 checkpoint to move. DataLoss names a damaged record.
  static Result<JobStore> Open(const std::string& data_dir, const std::string& last_job_id);

  // The job's checkpoint file (its directory is made when missing).
  Result<std::string> CheckpointPath(const std::string& job_id) const;
  // Whether `job` completed here with at least its rounds (so that running
  // it again would do nothing new).
  bool Completed(const proto::JobConfig& job) const;
  // Records the job as completed after `rounds` and removes the checkpoints
  // of the completed jobs beyond the newest kMaxKeptCheckpoints.
  Status MarkCompleted(const std::string& job_id, std::uint64_t rounds);

 private:
  explicit JobStore(std::string data_dir) : dir_(std::move(data_dir)) {}
  std::string dir_;
  struct Done {
    std::string job_id;
    std::uint64_t rounds = 0;
  };
  std::deque<Done> completed_;  // oldest first
};

}  // namespace murmur::node
