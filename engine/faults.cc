#include "engine/faults.h"

#include <cmath>
#include <sstream>

namespace murmur::engine {

namespace {

Status Bad(const std::string& field, const std::string& why) {
  return Status::InvalidArgument("fault field '" + field + "' " + why);
}

LinkFaults LinkFaultsOf(const proto::FaultConfig& c) {
  LinkFaults f;
  f.drop = c.drop();
  f.duplicate = c.duplicate();
  f.reorder = c.reorder();
  f.corrupt = c.corrupt();
  f.delay = FromSeconds(c.delay());
  f.delay_jitter = FromSeconds(c.delay_jitter());
  f.reorder_hold = FromSeconds(c.reorder_hold());
  return f;
}

Result<std::vector<PartitionWindow>> Windows(const proto::FaultConfig& c, NodeId nodes, FaultTime time) {
  auto windows = ParsePartitions(c.partition(), nodes);
  if (!windows.ok()) return windows.status().WithContext("fault field 'partition'");
  if (time == FaultTime::kUntilCleared) {
    if (windows->size() != 1)
      return Bad("partition",
                 "'" + c.partition() + "' must be one partition, not " + std::to_string(windows->size()));
    if ((*windows)[0].start != Nanos(0) || (*windows)[0].end != Nanos::max())
      return Bad("partition",
                 "'" + c.partition() + "': a daemon's partition holds until it is cleared; no @ window");
  }
  return windows;
}

// Adds the partition to `plan` (the plan's own checks: two groups or more, disjoint).
Status AddPartition(const proto::FaultConfig& c, NodeId nodes, FaultTime time, FaultPlan& plan) {
  MURMUR_ASSIGN_OR_RETURN(auto windows, Windows(c, nodes, time));
  if (time == FaultTime::kUntilCleared)
    return plan.SetManualPartition(std::move(windows[0].groups)).WithContext("fault field 'partition'");
  for (const auto& w : windows)
    MURMUR_RETURN_IF_ERROR(plan.AddPartition(w).WithContext("fault field 'partition'"));
  return Status::Ok();
}

}  // namespace

bool HasFaults(const proto::FaultConfig& faults) {
  return LinkFaultsOf(faults).any() || !faults.partition().empty();
}

Status ValidateFaults(const proto::FaultConfig& c, NodeId nodes, FaultTime time) {
  auto prob = [&](const char* field, double p, double limit) -> Status {
    if (!(p >= 0) || p > limit)
      return Bad(field,
                 "must be in [0, " + std::string(limit < 1 ? "1)" : "1]") + ", got " + std::to_string(p));
    return Status::Ok();
  };
  MURMUR_RETURN_IF_ERROR(prob("drop", c.drop(), 0.999));
  MURMUR_RETURN_IF_ERROR(prob("duplicate", c.duplicate(), 1));
  MURMUR_RETURN_IF_ERROR(prob("reorder", c.reorder(), 1));
  MURMUR_RETURN_IF_ERROR(prob("corrupt", c.corrupt(), 1));
  // A day of delay at most: a longer timer is a typo, not a test.
  for (auto [field, v] : {std::pair{"delay", c.delay()}, std::pair{"delay_jitter", c.delay_jitter()},
                          std::pair{"reorder_hold", c.reorder_hold()}}) {
    if (!(v >= 0) || !std::isfinite(v) || v > 86400) return Bad(field, "must be in [0, 86400] seconds");
  }
  if (c.partition().empty()) return Status::Ok();
  FaultPlan probe;
  return AddPartition(c, nodes, time, probe);
}

Status ApplyFaults(const proto::FaultConfig& c, NodeId nodes, FaultTime time, FaultPlan& plan) {
  MURMUR_RETURN_IF_ERROR(ValidateFaults(c, nodes, time));
  plan.Clear();
  const LinkFaults f = LinkFaultsOf(c);
  if (f.any()) plan.AddRule(FaultRule{kAnyNode, kAnyNode, Nanos(0), Nanos::max(), f});
  if (!c.partition().empty()) MURMUR_RETURN_IF_ERROR(AddPartition(c, nodes, time, plan));
  return Status::Ok();
}

std::string DescribeFaults(const proto::FaultConfig& faults) {
  std::ostringstream out;
  const char* sep = "";
  auto item = [&](const char* name, double v, bool present) {
    if (!present || v == 0) return;
    out << sep << name << " " << v;
    sep = ", ";
  };
  item("drop", faults.drop(), faults.has_drop());
  item("duplicate", faults.duplicate(), faults.has_duplicate());
  item("reorder", faults.reorder(), faults.has_reorder());
  item("corrupt", faults.corrupt(), faults.has_corrupt());
  item("delay s", faults.delay(), faults.has_delay());
  item("delay_jitter s", faults.delay_jitter(), faults.has_delay_jitter());
  if (faults.has_reorder_hold()) item("reorder_hold s", faults.reorder_hold(), true);
  if (!faults.partition().empty()) out << sep << "partition " << faults.partition();
  const std::string text = out.str();
  return text.empty() ? "none" : text;
}

}  // namespace murmur::engine
