#include "node/control/fault_control.h"

#include <sstream>

namespace murmur::node {

namespace {

LinkFaults ToLinkFaults(const proto::FaultConfig& c) {
  LinkFaults f;
  f.drop = c.drop();
  f.duplicate = c.duplicate();
  f.reorder = c.reorder();
  f.corrupt = c.corrupt();
  f.delay = FromSeconds(c.delay());
  f.delay_jitter = FromSeconds(c.delay_jitter());
  return f;
}

Result<std::vector<std::vector<NodeId>>> PartitionGroups(const std::string& spec) {
  MURMUR_ASSIGN_OR_RETURN(auto windows, ParsePartitions(spec, kMaxFaultNodeId));
  if (windows.size() != 1)
    return Status::InvalidArgument("fault field 'partition' '" + spec + "' must be one partition, not " +
                                   std::to_string(windows.size()));
  if (windows[0].start != Nanos(0) || windows[0].end != Nanos::max())
    return Status::InvalidArgument("fault field 'partition' '" + spec +
                                   "': a daemon's partition holds until it is cleared; no @ window");
  return std::move(windows[0].groups);
}

}  // namespace

Status ValidateFaultConfig(const proto::FaultConfig& faults) {
  // A day of delay at most: a longer timer is a typo, not a test.
  if (!(faults.delay() <= 86400) || !(faults.delay_jitter() <= 86400))
    return Status::InvalidArgument("fault fields 'delay' and 'delay_jitter' must be <= 86400 seconds");
  MURMUR_RETURN_IF_ERROR(ToLinkFaults(faults).Validate().WithContext("fault config"));
  if (faults.has_partition() && !faults.partition().empty()) {
    MURMUR_ASSIGN_OR_RETURN(auto groups, PartitionGroups(faults.partition()));
    FaultPlan probe;  // the plan's own checks: two groups or more, disjoint
    MURMUR_RETURN_IF_ERROR(
        probe.SetManualPartition(std::move(groups)).WithContext("fault field 'partition'"));
  }
  return Status::Ok();
}

Status ApplyFaultConfig(const proto::FaultConfig& faults, FaultPlan& plan) {
  MURMUR_RETURN_IF_ERROR(ValidateFaultConfig(faults));
  plan.Clear();
  const LinkFaults f = ToLinkFaults(faults);
  if (f.any()) plan.AddRule(FaultRule{kAnyNode, kAnyNode, Nanos(0), Nanos::max(), f});
  if (faults.has_partition() && !faults.partition().empty()) {
    MURMUR_ASSIGN_OR_RETURN(auto groups, PartitionGroups(faults.partition()));
    MURMUR_RETURN_IF_ERROR(plan.SetManualPartition(std::move(groups)));
  }
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
  if (!faults.partition().empty()) out << sep << "partition " << faults.partition();
  const std::string text = out.str();
  return text.empty() ? "none" : text;
}

}  // namespace murmur::node
