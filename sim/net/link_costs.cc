#include "sim/net/link_costs.h"

#include <cmath>

namespace murmur::sim {

Result<std::unique_ptr<LinkCosts>> LinkCosts::Make(const LinkCostOptions& o) {
  std::unique_ptr<LinkCosts> c(new LinkCosts());
  c->nodes_ = o.nodes;
  const double bits = 8 * o.model_bytes;
  const bool modelled = !o.links.empty() || o.devices != "uniform";
  if (!o.measured.empty() || modelled) {
    if (!(bits > 0) || !std::isfinite(bits))
      return Status::InvalidArgument("model_bytes must be a positive number of bytes");
  }
  if (!o.measured.empty()) {
    if (modelled)
      return Status::InvalidArgument("measured links replace links and devices; give one or the other");
    auto read = topology::ReadMeasuredLinks(o.measured, o.nodes);
    if (!read.ok()) return read.status().WithContext("measured");
    c->measured_ = std::move(read).value();
    if (o.nodes > 0 && c->measured_.nodes > o.nodes)
      return Status::InvalidArgument("measured links name node " + std::to_string(c->measured_.nodes - 1) +
                                     " but nodes is " + std::to_string(o.nodes));
    c->nodes_ = c->measured_.nodes;
    c->measured_path_ = o.measured;
    c->cost_ = topology::MeasuredCost(c->measured_, bits);
    return c;
  }
  if (!modelled) return c;
  auto devices = o.devices.rfind("trace:", 0) == 0 ? ReadDeviceTrace(o.devices.substr(6), o.nodes)
                                                   : MakeDeviceProfiles(o.devices, o.nodes, o.seed);
  if (!devices.ok()) return devices.status().WithContext("devices");
  c->devices_ = std::move(devices).value();
  if (!o.links.empty()) {
    auto links = MakeLinkModel(o.links, o.nodes, o.seed);
    if (!links.ok()) return links.status().WithContext("links");
    c->links_ = std::move(links).value();
  }
  c->cost_ = [c = c.get(), bits](NodeId u, NodeId v) {
    return PathSeconds(c->links_.get(), c->devices_, u, v, bits);
  };
  return c;
}

std::string LinkCosts::Describe() const {
  if (!measured_path_.empty()) return "measured (" + measured_path_ + ")";
  return links_ ? links_->Describe() : "the devices' own";
}

}  // namespace murmur::sim
