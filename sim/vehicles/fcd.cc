#include "sim/vehicles/fcd.h"

#include <cmath>

namespace murmur::sim {

namespace {
constexpr double kMaxTime = 1e9;        // s: 31 years of traffic
constexpr double kMinStep = 1e-3;       // s: SUMO's finest step
constexpr double kMaxCoordinate = 1e9;  // m: far beyond any network
constexpr double kMaxSpeed = 1e4;       // m/s
}  // namespace

Result<std::unique_ptr<FcdReader>> FcdReader::Open(const std::string& path) {
  std::unique_ptr<FcdReader> r(new FcdReader(path));
  MURMUR_ASSIGN_OR_RETURN(r->xml_, XmlStream::Open(path, r.get()));
  return r;
}

Result<bool> FcdReader::Next(FcdStep* step) {
  while (ready_.empty()) {
    MURMUR_ASSIGN_OR_RETURN(bool more, xml_->Feed());
    if (!more && ready_.empty()) {
      if (!root_seen_)
        return Status::InvalidArgument(path_ + ": no <fcd-export> element (not a SUMO FCD file)");
      return false;
    }
  }
  *step = std::move(ready_.front());
  ready_.pop_front();
  return true;
}

Status FcdReader::Start(std::string_view name, XmlStream::Attrs attrs) {
  ++depth_;
  if (depth_ == 1) {
    if (name != "fcd-export")
      return Status::InvalidArgument("root element <" + std::string(name) +
                                     ">: a SUMO FCD file has <fcd-export>");
    root_seen_ = true;
    return Status::Ok();
  }
  if (name == "timestep") {
    if (depth_ != 2) return Status::InvalidArgument("<timestep> inside another element");
    MURMUR_ASSIGN_OR_RETURN(double t, XmlStream::Number(attrs, name, "time"));
    if (t < 0 || t > kMaxTime)
      return Status::InvalidArgument("timestep time " + std::to_string(t) + " outside [0, " +
                                     std::to_string(kMaxTime) + "] s");
    if (!(t >= last_time_ + kMinStep)) {
      return Status::InvalidArgument("timestep time " + std::to_string(t) + " after " +
                                     std::to_string(last_time_) +
                                     ": timesteps must go forward in time, at least 1 ms apart");
    }
    last_time_ = t;
    building_.time = t;
    building_.vehicles.clear();
    ids_.clear();
    in_step_ = true;
    return Status::Ok();
  }
  if (name != "vehicle") return Status::Ok();  // person, container, ...: not ours
  if (!in_step_ || depth_ != 3) return Status::InvalidArgument("<vehicle> outside a <timestep>");
  const char* id = XmlStream::Find(attrs, "id");
  if (id == nullptr) return Status::InvalidArgument("<vehicle> without attribute id");
  FcdVehicle v;
  v.id = id;
  if (v.id.size() > kMaxIdBytes)
    return Status::InvalidArgument("vehicle id of " + std::to_string(v.id.size()) + " bytes (at most " +
                                   std::to_string(kMaxIdBytes) + ")");
  if (XmlStream::Find(attrs, "x") == nullptr && XmlStream::Find(attrs, "lon") != nullptr) {
    return Status::InvalidArgument(
        "vehicle positions in lon/lat (--fcd-output.geo): murmur needs SUMO's x, y in metres");
  }
  MURMUR_ASSIGN_OR_RETURN(v.x, XmlStream::Number(attrs, name, "x"));
  MURMUR_ASSIGN_OR_RETURN(v.y, XmlStream::Number(attrs, name, "y"));
  MURMUR_ASSIGN_OR_RETURN(v.speed, XmlStream::Number(attrs, name, "speed", /*optional=*/true));
  MURMUR_ASSIGN_OR_RETURN(v.angle, XmlStream::Number(attrs, name, "angle", /*optional=*/true));
  if (std::abs(v.x) > kMaxCoordinate || std::abs(v.y) > kMaxCoordinate)
    return Status::InvalidArgument("vehicle " + v.id + " at a coordinate beyond 1e9 m");
  if (v.speed < 0 || v.speed > kMaxSpeed)
    return Status::InvalidArgument("vehicle " + v.id + " with speed " + std::to_string(v.speed) +
                                   " outside [0, 1e4] m/s");
  if (building_.vehicles.size() >= kMaxVehiclesPerStep)
    return Status::InvalidArgument("more than " + std::to_string(kMaxVehiclesPerStep) +
                                   " vehicles in one timestep");
  if (!ids_.insert(v.id).second)
    return Status::InvalidArgument("vehicle " + v.id + " twice in the timestep at " +
                                   std::to_string(building_.time));
  building_.vehicles.push_back(std::move(v));
  return Status::Ok();
}

Status FcdReader::End(std::string_view name) {
  if (depth_ == 2 && name == "timestep" && in_step_) {
    ready_.push_back(std::move(building_));
    building_ = FcdStep();
    in_step_ = false;
  }
  --depth_;
  return Status::Ok();
}

}  // namespace murmur::sim
