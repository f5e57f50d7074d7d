// Vehicles from a SUMO trace: the floating car data of `sumo --fcd-output`
// (sim/vehicles/fcd.h) drives the nodes, and roadside units stand at the
// network's junctions (sim/vehicles/sumo_net.h).
//
// Nodes and vehicles. Nodes 0 .. V-1 (V = nodes - rsus) are seats for
// vehicles. A vehicle entering the trace takes the lowest free seat; one that
// finds none is not simulated on that trip (ScanSumo counts them). A vehicle
// that leaves frees its seat at the first timestep it is missing from, and the
// seat can be taken again from the timestep after: the node is offline for at
// least one step between two vehicles. A node keeps its model and its data
// across vehicles, as the app of a fleet that hands a device to the next car
// would. With V at least the most vehicles on the road at once, every
// vehicle is simulated. A vehicle id seen again after it left is a new trip.
//
// Time. Virtual time t is the trace's time t + begin (SumoSource::begin, to
// skip the minutes while the streets fill). A vehicle is on the road (its
// node online) from the first timestep it is in to the first it is missing
// from; after the trace's last timestep every vehicle leaves one step later.
// Seats are assigned from the trace's first timestep, whatever `begin`.
// Between timesteps positions are interpolated linearly; a vehicle missing
// from the next timestep stays where it was last seen. Velocities are what the
// vehicle's own instruments say at the last timestep (speed and angle, SUMO's
// degrees clockwise from north), or without them the last step's
// displacement over its duration.
//
// Two passes over the file, both streamed: ScanSumo reads it once before the
// run (seats, presence transitions, the busiest junctions), and SumoMobility
// reads it again as virtual time advances. Memory is O(nodes + vehicles on
// the road at once + junctions + simulated trips: two presence changes
// each), whatever the file's length.
//
// Thread-safety: none.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <queue>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/status.h"
#include "sim/vehicles/fcd.h"
#include "sim/vehicles/mobility.h"
#include "sim/vehicles/sumo_net.h"

namespace murmur::sim {

inline constexpr NodeId kNoSeat = ~NodeId{0};

// Seats vehicles as they come and go (the rule above), one timestep at a time.
class SeatAssigner {
 public:
  explicit SeatAssigner(NodeId seats);
  // Frees the seats of vehicles missing from `step`, seats its newcomers;
  // seat_of[i] is vehicles[i]'s seat or kNoSeat.
  void Step(const FcdStep& step, std::vector<NodeId>* seat_of);
  std::uint64_t trips() const { return trips_; }
  std::uint64_t unseated() const { return unseated_; }

 private:
  std::unordered_map<std::string, NodeId> on_road_;  // id -> seat (kNoSeat: driving unsimulated)
  std::priority_queue<NodeId, std::vector<NodeId>, std::greater<>> free_;
  std::uint64_t trips_ = 0, unseated_ = 0;
};

struct Presence {
  double time;  // seconds
  NodeId node;
  bool online;
};

struct SumoScan {
  double begin = 0, end = 0;  // the first and last timesteps' times
  double step = 0;            // the shortest interval between timesteps
  std::uint64_t timesteps = 0;
  std::uint64_t trips = 0;         // vehicles entering (an id seen again after leaving counts again)
  std::uint64_t unseated = 0;      // trips not simulated: every seat was taken
  std::uint64_t most_at_once = 0;  // the most vehicles in one timestep
  // Seats going on and off the road in time order; a seat not present at
  // time 0 goes offline at 0.
  std::vector<Presence> presence;
  std::vector<Junction> rsus;  // where the roadside units stand
};
// (begin, end and step are in the trace's time; presence in virtual time.)

struct SumoSource {
  std::string fcd;            // the trace
  std::string net;            // the network, for RSUs (needed when rsus > 0)
  std::string rsu_junctions;  // junction ids (PickJunctions: a list or file:PATH); empty: the busiest
  double begin = 0;           // the trace time that is virtual time 0
};

// Reads the trace once. RSUs: the junctions named, or else the `radio.rsus`
// busiest ones: the most vehicle samples within the RSU's range over the
// trace from `begin` on, each at least that range from those picked before it while any such
// remains (ties: the network file's order). Errors name the file and line,
// or the field.
Result<SumoScan> ScanSumo(const SumoSource& source, NodeId nodes, const RadioOptions& radio);

class SumoMobility : public Mobility {
 public:
  // `scan` from ScanSumo on the same source and nodes.
  static Result<std::unique_ptr<SumoMobility>> Open(const SumoSource& source, NodeId nodes,
                                                    const RadioOptions& radio, const SumoScan& scan);
  // Dies with a message if the file no longer reads as it did in the scan.
  void Advance(double t) override;
  // Whether the trace is over: every vehicle has left for good.
  bool over() const { return over_; }

 private:
  SumoMobility(NodeId nodes, const RadioOptions& radio, std::unique_ptr<FcdReader> reader);
  void Shift();  // next_ becomes cur_; reads the following timestep

  struct Snapshot {
    double time = 0;
    std::vector<topology::Point2> pos, vel;
    std::vector<std::uint8_t> present;
  };
  std::unique_ptr<FcdReader> reader_;
  SeatAssigner seats_;
  Snapshot cur_, next_;
  bool started_ = false, ended_ = false, over_ = false;
  double last_step_ = 0;  // the last interval between timesteps
  double begin_ = 0;      // SumoSource::begin
  FcdStep step_;
  std::vector<NodeId> seat_of_;
};

// Round t's contact graph, at virtual time t x interval, whatever order the
// rounds are asked in: a node far behind gets its own round's graph, not the
// present's. The trace is streamed in round order and each round's
// positions, velocities and presence are kept, 33 bytes a node a round up to
// the trace's end; every round after it is the same empty road.
class RoundContacts {
 public:
  // What a round's contact graph holds, told once per round in round order
  // (up to the trace's end): vehicles on the road, links between them, and
  // links between a vehicle and an RSU; with the graph and positions.
  struct Counts {
    std::uint64_t round = 0;
    double time = 0;  // virtual seconds
    std::uint64_t on_road = 0, v2v = 0, v2rsu = 0;
    std::uint64_t kept = 0;  // links to vehicles the round uses (contact-aware: fewer)
    const topology::Graph* contacts = nullptr;
    const std::vector<topology::Point2>* positions = nullptr;
    const std::vector<std::uint8_t>* present = nullptr;
  };
  // `mobility` must outlive this and is advanced by it alone.
  // With `aware`, each round's graph keeps the lasting contacts alone
  // (KeepLastingContacts); Counts then says how many links were kept.
  RoundContacts(SumoMobility* mobility, double interval, std::function<void(const Counts&)> observer = {},
                std::optional<ContactAware> aware = std::nullopt)
      : mobility_(mobility), interval_(interval), observer_(std::move(observer)), aware_(std::move(aware)) {}
  topology::Graph At(std::uint64_t round);

 private:
  struct Snap {
    std::vector<topology::Point2> pos, vel;
    std::vector<std::uint8_t> present;
  };
  topology::Graph Graph(const Snap& snap) const;
  SumoMobility* mobility_;
  double interval_;
  std::function<void(const Counts&)> observer_;
  std::optional<ContactAware> aware_;
  std::vector<Snap> rounds_;
};

}  // namespace murmur::sim
