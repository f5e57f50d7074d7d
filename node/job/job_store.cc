#include "node/job/job_store.h"

#include <algorithm>
#include <filesystem>
#include <sstream>

#include "crypto/file_io.h"
#include "engine/plan.h"
#include "node/job/checkpoint.h"
#include "node/job/job_message.h"

namespace murmur::node {

namespace {

namespace fs = std::filesystem;

constexpr const char* kCompleted = "completed";
// The record: at most kMaxCompletedRecord lines of an id (<= 64), a space, a count (<= 20) and a newline.
constexpr std::size_t kMaxRecordBytes = kMaxCompletedRecord * 86;

}  // namespace

std::uint64_t OwnerTag(const proto::JobConfig& job) {
  proto::JobConfig owner = job;
  owner.mutable_spec()->clear_rounds();
  if (!engine::StateFollowsGraph(job.spec())) owner.mutable_spec()->clear_topology();
  return JobTag(owner);
}

Result<JobStore> JobStore::Open(const std::string& data_dir, const std::string& last_job_id) {
  JobStore store(data_dir + "/jobs");
  std::error_code ec;
  fs::create_directories(store.dir_, ec);
  if (ec) return Status::Internal("cannot make '" + store.dir_ + "': " + ec.message());
  const std::string record = store.dir_ + "/" + kCompleted;
  if (fs::exists(record)) {
    auto text = crypto::ReadSmallFile(record, kMaxRecordBytes);
    if (!text.ok()) return text.status().WithContext("the record of completed jobs");
    std::istringstream lines(*text);
    for (std::string line; std::getline(lines, line);) {
      std::istringstream fields(line);
      Done done;
      if (!(fields >> done.job_id >> done.rounds) || done.job_id.size() > 64 ||
          done.job_id.find('/') != std::string::npos || done.job_id[0] == '.')
        return Status::DataLoss("'" + record +
                                "' holds a line that is not \"JOB_ID ROUNDS\": remove the file to "
                                "forget which jobs completed");
      store.completed_.push_back(std::move(done));
    }
  }
  const std::string old = data_dir + "/" + kCheckpointFile;
  if (!last_job_id.empty() && fs::exists(old)) {
    MURMUR_ASSIGN_OR_RETURN(std::string to, store.CheckpointPath(last_job_id));
    if (!fs::exists(to)) fs::rename(old, to, ec);
    if (ec) return Status::Internal("cannot move '" + old + "' to '" + to + "': " + ec.message());
  }
  return store;
}

Result<std::string> JobStore::CheckpointPath(const std::string& job_id) const {
  // Job ids are 1-64 of [A-Za-z0-9._-] not starting with '.' (ValidateJobConfig): a plain name.
  const std::string dir = dir_ + "/" + job_id;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return Status::Internal("cannot make '" + dir + "': " + ec.message());
  return dir + "/" + kCheckpointFile;
}

bool JobStore::Completed(const proto::JobConfig& job) const {
  return std::any_of(completed_.begin(), completed_.end(), [&](const Done& d) {
    return d.job_id == job.job_id() && d.rounds >= job.spec().rounds();
  });
}

Status JobStore::MarkCompleted(const std::string& job_id, std::uint64_t rounds) {
  std::erase_if(completed_, [&](const Done& d) { return d.job_id == job_id; });
  completed_.push_back({job_id, rounds});
  while (completed_.size() > kMaxCompletedRecord) completed_.pop_front();
  std::string text;
  for (const auto& d : completed_) text += d.job_id + " " + std::to_string(d.rounds) + "\n";
  MURMUR_RETURN_IF_ERROR(crypto::WriteFileAtomic(dir_ + "/" + kCompleted, crypto::AsBytes(text), 0644));
  // Keep the final models of the newest completed jobs only.
  if (completed_.size() > kMaxKeptCheckpoints) {
    for (std::size_t i = 0; i + kMaxKeptCheckpoints < completed_.size(); ++i) {
      std::error_code ec;
      fs::remove_all(dir_ + "/" + completed_[i].job_id, ec);
    }
  }
  return Status::Ok();
}

}  // namespace murmur::node
