// The link costs a link-aware topology is chosen from (topology/link_aware.h),
// made from what a user names: the simulator's device and link models
// (`devices`, `links`: what `murmur sim` runs the job on) or round trips and
// throughputs measured on a fleet (a `murmur peers --rtt-csv` file). One
// reading for `murmur topology` and murmur.topology, so that both choose
// the same graph from the same words.
//
// Thread-safety: a LinkCosts is read-only once made; its cost function
// refers to it, so it must outlive every use of `cost`.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "sim/net/device.h"
#include "sim/net/links.h"
#include "topology/factory.h"
#include "topology/measured.h"

namespace murmur::sim {

struct LinkCostOptions {
  std::string devices = "uniform";  // a class, a mix or trace:FILE.csv (docs/simulator.md, Devices)
  std::string links;                // "" or a link model (sites:..., plane:..., trace:...)
  std::string measured;             // "" or a measured-links CSV; replaces devices and links
  double model_bytes = 407080;      // the message a link carries, for its time (the MLP 784-128-10)
  std::uint32_t nodes = 0;          // 0 with `measured`: the file's count
  std::uint64_t seed = 1;
};

class LinkCosts {
 public:
  // InvalidArgument naming the option (devices, links, measured,
  // model_bytes) and what is wrong; `measured` with devices or links set
  // is refused. Nothing given (uniform devices, no links, no file) makes
  // costs that are all the same: `any()` is false.
  static Result<std::unique_ptr<LinkCosts>> Make(const LinkCostOptions& options);

  bool any() const { return static_cast<bool>(cost_); }
  std::uint32_t nodes() const { return nodes_; }  // the measured file's count, else the options'
  const topology::PairCost& cost() const { return cost_; }
  // What the costs come from, for a report: the link model's description,
  // "the devices' own" (devices alone) or "measured (FILE)".
  std::string Describe() const;

 private:
  LinkCosts() = default;
  std::vector<DeviceProfile> devices_;
  std::unique_ptr<LinkModel> links_;
  topology::MeasuredLinks measured_;
  topology::PairCost cost_;
  std::uint32_t nodes_ = 0;
  std::string measured_path_;
};

}  // namespace murmur::sim
