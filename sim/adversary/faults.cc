#include "sim/adversary/faults.h"

#include "engine/faults.h"
#include "gossip/messages.h"

namespace murmur::sim {

bool HasScenarioFaults(const proto::Scenario& s) { return engine::HasFaults(s.faults()); }

Status ValidateScenarioFaults(const proto::Scenario& s) {
  return engine::ValidateFaults(s.faults(), s.spec().nodes(), engine::FaultTime::kWindows);
}

Result<std::unique_ptr<FaultPlan>> MakeScenarioFaultPlan(const proto::Scenario& s) {
  auto plan = std::make_unique<FaultPlan>();
  MURMUR_RETURN_IF_ERROR(
      engine::ApplyFaults(s.faults(), s.spec().nodes(), engine::FaultTime::kWindows, *plan));
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
