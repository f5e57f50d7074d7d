// FcdReader: SUMO's floating car data (`sumo --fcd-output FILE`), one
// timestep at a time, streamed: memory holds the timestep being read and one
// 64 KiB chunk of the file, never the file (a city for an hour is gigabytes).
//
//   <fcd-export>
//     <timestep time="3.00">
//       <vehicle id="veh7" x="201.60" y="222.49" angle="0.00" speed="4.93" .../>
//     </timestep>
//   </fcd-export>
//
// Positions are SUMO's network coordinates in metres (x, y); `speed` (m/s)
// and `angle` (degrees clockwise from north, SUMO's convention) are optional
// (`--fcd-output.attributes` may leave them out): NaN when absent. Other
// elements (person, container) and attributes are skipped. Refused, naming
// the file and line: malformed XML, a root other than fcd-export, a vehicle
// outside a timestep, a timestep inside one, timesteps whose times do not
// increase by at least 1 ms, a time outside [0, 1e9] s, a vehicle twice in
// one timestep, a missing or non-finite x, y or time, a coordinate beyond
// 1e9 m, a speed outside [0, 1e4] m/s, geographic output (lon/lat: murmur
// needs metres), an id over 256 bytes, more than 2^20 vehicles in one
// timestep.
//
// Thread-safety: none.
#pragma once

#include <deque>
#include <memory>
#include <string>
#include <unordered_set>
#include <vector>

#include "core/status.h"
#include "sim/vehicles/xml_stream.h"

namespace murmur::sim {

struct FcdVehicle {
  std::string id;
  double x = 0, y = 0;
  double speed = 0, angle = 0;  // NaN when the trace has none
};

struct FcdStep {
  double time = 0;
  std::vector<FcdVehicle> vehicles;  // in the file's order
};

class FcdReader : private XmlStream::Handler {
 public:
  static constexpr std::size_t kMaxIdBytes = 256;
  static constexpr std::size_t kMaxVehiclesPerStep = std::size_t{1} << 20;

  // NotFound when the file cannot be opened.
  static Result<std::unique_ptr<FcdReader>> Open(const std::string& path);

  // The next timestep into *step; false at the end of the file. Errors name
  // the file and line ("trace.xml:812: ...").
  Result<bool> Next(FcdStep* step);

  const std::string& path() const { return path_; }

 private:
  explicit FcdReader(std::string path) : path_(std::move(path)) {}
  Status Start(std::string_view name, XmlStream::Attrs attrs) override;
  Status End(std::string_view name) override;

  std::string path_;
  std::unique_ptr<XmlStream> xml_;
  std::deque<FcdStep> ready_;  // whole timesteps parsed from the current chunk
  FcdStep building_;
  std::unordered_set<std::string> ids_;  // of building_
  int depth_ = 0;                        // element nesting
  bool root_seen_ = false, in_step_ = false;
  double last_time_ = -1e300;
};

}  // namespace murmur::sim
