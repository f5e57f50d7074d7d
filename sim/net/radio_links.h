// RadioLinks: the links of a vehicles scenario given a radio_rate. A V2V or
// vehicle-RSU link exists while both ends are on the road and within the
// pair's range (Mobility::Range) and carries RadioRate::At(distance) then:
// as a vehicle drives, its rate to each peer changes, and a message whose
// link is gone when it is sent or when its last byte comes in is lost
// (Simulator: LinkModel::Up), as on a radio whose contact ended
// mid-transfer. RSU-RSU links are wired (no limit of their own); so are
// links to nodes past the mobility's (a federated run's top server).
//
// The positions come from a mobility of this model's own, advanced to the
// simulator's clock: the simulator asks at non-decreasing times from one
// rank's event loop, and each rank builds its own model from the same
// source, so a partitioned run sees the same links.
//
// Thread-safety: none (one rank's event loop).
#pragma once

#include <memory>
#include <string>

#include "sim/net/links.h"
#include "sim/vehicles/mobility.h"

namespace murmur::sim {

class RadioLinks : public LinkModel {
 public:
  RadioLinks(std::unique_ptr<Mobility> mobility, RadioRate rate);

  double Bps(NodeId a, NodeId b) const override;  // at the mobility's current time
  double BpsAt(NodeId a, NodeId b, Nanos t) const override;
  bool Up(NodeId a, NodeId b, Nanos t) const override;
  Nanos Latency(NodeId, NodeId) const override { return Nanos(0); }
  std::string Describe() const override;

 private:
  void AdvanceTo(Nanos t) const;
  bool Wired(NodeId a, NodeId b) const;

  mutable std::unique_ptr<Mobility> mobility_;  // advanced by const queries: see above
  RadioRate rate_;
};

// The RadioRate of a radio_rate text, "FAST:SLOW" in Mbit/s (FAST >= SLOW > 0).
Result<RadioRate> ParseRadioRate(const std::string& text);

}  // namespace murmur::sim
