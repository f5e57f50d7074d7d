#include "core/fault_plan.h"

#include <algorithm>
#include <charconv>
#include <string>

namespace murmur {

namespace {

std::string Str(std::string_view s) { return std::string(s); }

std::vector<std::string_view> Split(std::string_view s, char sep) {
  std::vector<std::string_view> parts;
  std::size_t begin = 0;
  for (;;) {
    std::size_t end = s.find(sep, begin);
    parts.push_back(s.substr(begin, end == std::string_view::npos ? std::string_view::npos : end - begin));
    if (end == std::string_view::npos) return parts;
    begin = end + 1;
  }
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  return s;
}

Result<NodeId> ParseNode(std::string_view text, NodeId num_nodes) {
  text = Trim(text);
  std::uint64_t v = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || ptr != text.data() + text.size())
    return Status::InvalidArgument(std::string("'").append(text).append("' is not a node id"));
  if (v >= num_nodes) {
    std::string msg = "node ";
    msg.append(text).append(" is not below the ").append(std::to_string(num_nodes)).append(" nodes");
    return Status::InvalidArgument(msg);
  }
  return static_cast<NodeId>(v);
}

// "12s", "12", "250ms", "1.5s" -> Nanos.
Result<Nanos> ParseTime(std::string_view text) {
  text = Trim(text);
  double scale = 1e9;
  if (text.size() > 2 && text.substr(text.size() - 2) == "ms") {
    scale = 1e6;
    text.remove_suffix(2);
  } else if (!text.empty() && text.back() == 's') {
    text.remove_suffix(1);
  }
  std::string s(text);
  try {
    std::size_t used = 0;
    double v = std::stod(s, &used);
    if (used == s.size() && v >= 0 && v * scale < 9e18) return Nanos(static_cast<std::int64_t>(v * scale));
  } catch (const std::exception&) {
  }
  return Status::InvalidArgument("'" + s + "' is not a time (a number >= 0 with an optional s or ms)");
}

Result<std::vector<NodeId>> ParseGroup(std::string_view text, NodeId num_nodes) {
  std::vector<NodeId> group;
  for (std::string_view item : Split(text, ',')) {
    auto dash = item.find('-');
    if (dash == std::string_view::npos) {
      MURMUR_ASSIGN_OR_RETURN(NodeId n, ParseNode(item, num_nodes));
      group.push_back(n);
      continue;
    }
    MURMUR_ASSIGN_OR_RETURN(NodeId a, ParseNode(item.substr(0, dash), num_nodes));
    MURMUR_ASSIGN_OR_RETURN(NodeId b, ParseNode(item.substr(dash + 1), num_nodes));
    if (b < a) return Status::InvalidArgument("range '" + Str(Trim(item)) + "' runs backwards");
    for (NodeId n = a; n <= b; ++n) group.push_back(n);
  }
  return group;
}

Result<PartitionWindow> ParseWindow(std::string_view text, NodeId num_nodes) {
  PartitionWindow w;
  std::string_view groups = text;
  auto at = text.find('@');
  if (at != std::string_view::npos) {
    groups = text.substr(0, at);
    std::string_view times = text.substr(at + 1);
    auto dash = times.find('-');
    if (dash == std::string_view::npos)
      return Status::InvalidArgument("window '" + Str(times) + "' needs T0-T1");
    MURMUR_ASSIGN_OR_RETURN(w.start, ParseTime(times.substr(0, dash)));
    if (!Trim(times.substr(dash + 1)).empty()) {
      MURMUR_ASSIGN_OR_RETURN(w.end, ParseTime(times.substr(dash + 1)));
    }
    if (w.end <= w.start) return Status::InvalidArgument("window '" + Str(times) + "' ends before it starts");
  }
  for (std::string_view g : Split(groups, '|')) {
    MURMUR_ASSIGN_OR_RETURN(auto group, ParseGroup(g, num_nodes));
    w.groups.push_back(std::move(group));
  }
  return w;
}

}  // namespace

Status LinkFaults::Validate() const {
  auto prob = [](const char* name, double p, bool below_one) -> Status {
    if (!(p >= 0) || p > 1 || (below_one && p >= 1))
      return Status::InvalidArgument(std::string("fault probability '") + name + "' must be in [0, " +
                                     (below_one ? "1)" : "1]") + ", got " + std::to_string(p));
    return Status::Ok();
  };
  MURMUR_RETURN_IF_ERROR(prob("drop", drop, true));
  MURMUR_RETURN_IF_ERROR(prob("duplicate", duplicate, false));
  MURMUR_RETURN_IF_ERROR(prob("reorder", reorder, false));
  MURMUR_RETURN_IF_ERROR(prob("corrupt", corrupt, false));
  if (delay.count() < 0 || delay_jitter.count() < 0 || reorder_hold.count() < 0)
    return Status::InvalidArgument("fault delay, delay jitter and reorder hold must be >= 0");
  if (corrupt_flips < 0) return Status::InvalidArgument("corrupt_flips must be >= 0");
  return Status::Ok();
}

Result<std::vector<PartitionWindow>> ParsePartitions(std::string_view spec, NodeId num_nodes) {
  std::vector<PartitionWindow> windows;
  if (Trim(spec).empty()) return windows;
  for (std::string_view text : Split(spec, ';')) {
    auto w = ParseWindow(text, num_nodes);
    if (!w.ok()) return w.status().WithContext("partition '" + Str(Trim(text)) + "'");
    windows.push_back(std::move(w).value());
  }
  return windows;
}

bool FaultPlan::Cut::Separates(NodeId a, NodeId b) const {
  if (a >= group_of.size() || b >= group_of.size()) return false;
  int ga = group_of[a], gb = group_of[b];
  return ga >= 0 && gb >= 0 && ga != gb;
}

Result<FaultPlan::Cut> FaultPlan::MakeCut(const std::vector<std::vector<NodeId>>& groups, Nanos start,
                                          Nanos end) {
  if (groups.size() < 2)
    return Status::InvalidArgument("a partition needs at least two groups, got " +
                                   std::to_string(groups.size()));
  Cut cut;
  cut.start = start;
  cut.end = end;
  for (std::size_t g = 0; g < groups.size(); ++g) {
    if (groups[g].empty())
      return Status::InvalidArgument("partition group " + std::to_string(g) + " is empty");
    for (NodeId n : groups[g]) {
      if (n == kNoNode) return Status::InvalidArgument("partition group names no node");
      if (n >= cut.group_of.size()) cut.group_of.resize(static_cast<std::size_t>(n) + 1, -1);
      if (cut.group_of[n] >= 0)
        return Status::InvalidArgument("node " + std::to_string(n) + " is in two partition groups");
      cut.group_of[n] = static_cast<int>(g);
    }
  }
  return cut;
}

void FaultPlan::AddRule(const FaultRule& rule) { rules_.push_back(rule); }

Status FaultPlan::AddPartition(const PartitionWindow& window) {
  MURMUR_ASSIGN_OR_RETURN(Cut cut, MakeCut(window.groups, window.start, window.end));
  cuts_.push_back(std::move(cut));
  return Status::Ok();
}

Status FaultPlan::SetManualPartition(std::vector<std::vector<NodeId>> groups) {
  MURMUR_ASSIGN_OR_RETURN(Cut cut, MakeCut(groups, Nanos(0), Nanos::max()));
  std::lock_guard<std::mutex> lock(mu_);
  manual_ = std::make_unique<Cut>(std::move(cut));
  return Status::Ok();
}

void FaultPlan::ClearManualPartition() {
  std::lock_guard<std::mutex> lock(mu_);
  manual_.reset();
}

void FaultPlan::Clear() {
  rules_.clear();
  cuts_.clear();
  ClearManualPartition();
}

LinkFaults FaultPlan::FaultsFor(NodeId from, NodeId to, Nanos now) const {
  for (auto it = rules_.rbegin(); it != rules_.rend(); ++it) {
    const FaultRule& r = *it;
    if ((r.from == kAnyNode || r.from == from) && (r.to == kAnyNode || r.to == to) && now >= r.start &&
        now < r.end)
      return r.faults;
  }
  return LinkFaults{};
}

bool FaultPlan::Partitioned(NodeId from, NodeId to, Nanos now) const {
  for (const Cut& c : cuts_) {
    if (now >= c.start && now < c.end && c.Separates(from, to)) return true;
  }
  std::lock_guard<std::mutex> lock(mu_);
  return manual_ != nullptr && manual_->Separates(from, to);
}

}  // namespace murmur
