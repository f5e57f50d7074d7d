#include "sim/faults.h"

#include <cmath>

#include "gossip/messages.h"

namespace murmur::sim {

namespace {

Nanos FromMillis(double ms) { return Nanos(static_cast<std::int64_t>(ms * 1e6)); }

LinkFaults ScenarioLinkFaults(const proto::Scenario& s) {
  LinkFaults f;
  f.drop = s.fault_drop();
  f.duplicate = s.fault_duplicate();
  f.reorder = s.fault_reorder();
  f.corrupt = s.fault_corrupt();
  f.delay = FromMillis(s.fault_delay_ms());
  f.delay_jitter = FromMillis(s.fault_jitter_ms());
  f.reorder_hold = FromMillis(s.fault_reorder_hold_ms());
  return f;
}

}  // namespace

bool HasScenarioFaults(const proto::Scenario& s) {
  return ScenarioLinkFaults(s).any() || !s.fault_partition().empty();
}

Status ValidateScenarioFaults(const proto::Scenario& s) {
  auto bad = [](const std::string& field, const std::string& why) {
    return Status::InvalidArgument("scenario field '" + field + "' " + why);
  };
  auto prob = [&](const char* field, double p, double limit) -> Status {
    if (!(p >= 0) || p > limit)
      return bad(field,
                 "must be in [0, " + std::string(limit < 1 ? "1)" : "1]") + ", got " + std::to_string(p));
    return Status::Ok();
  };
  MURMUR_RETURN_IF_ERROR(prob("fault_drop", s.fault_drop(), 0.999));
  MURMUR_RETURN_IF_ERROR(prob("fault_duplicate", s.fault_duplicate(), 1));
  MURMUR_RETURN_IF_ERROR(prob("fault_reorder", s.fault_reorder(), 1));
  MURMUR_RETURN_IF_ERROR(prob("fault_corrupt", s.fault_corrupt(), 1));
  for (auto [field, v] :
       {std::pair{"fault_delay_ms", s.fault_delay_ms()}, std::pair{"fault_jitter_ms", s.fault_jitter_ms()},
        std::pair{"fault_reorder_hold_ms", s.fault_reorder_hold_ms()}}) {
    if (!(v >= 0) || !std::isfinite(v) || v > 1e9) return bad(field, "must be in [0, 1e9] milliseconds");
  }
  if (!s.fault_partition().empty()) {
    auto windows = ParsePartitions(s.fault_partition(), s.spec().nodes());
    if (!windows.ok()) return windows.status().WithContext("scenario field 'fault_partition'");
    FaultPlan check;
    for (const auto& w : *windows) {
      Status st = check.AddPartition(w);
      if (!st.ok()) return st.WithContext("scenario field 'fault_partition'");
    }
  }
  return Status::Ok();
}

Result<std::unique_ptr<FaultPlan>> MakeScenarioFaultPlan(const proto::Scenario& s) {
  MURMUR_RETURN_IF_ERROR(ValidateScenarioFaults(s));
  auto plan = std::make_unique<FaultPlan>();
  LinkFaults f = ScenarioLinkFaults(s);
  if (f.any()) plan->AddRule(FaultRule{kAnyNode, kAnyNode, Nanos(0), Nanos::max(), f});
  if (!s.fault_partition().empty()) {
    MURMUR_ASSIGN_OR_RETURN(auto windows, ParsePartitions(s.fault_partition(), s.spec().nodes()));
    for (const auto& w : windows) MURMUR_RETURN_IF_ERROR(plan->AddPartition(w));
  }
  return plan;
}

WireDecoder GossipWireDecoder() {
  return [](std::uint32_t kind, std::span<const std::uint8_t> bytes) -> Result<MessagePtr> {
    if (kind != gossip::kGossipMessageKind)
      return Status::InvalidArgument("message of unknown kind " + std::to_string(kind));
    MURMUR_ASSIGN_OR_RETURN(auto msg, gossip::GossipMessage::Decode(bytes, compression::DecodeLimits{}));
    return MessagePtr(std::move(msg));
  };
}

}  // namespace murmur::sim
