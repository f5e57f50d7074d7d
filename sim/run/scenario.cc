#include "sim/run/scenario.h"

#include <cmath>

#include "engine/algorithms.h"
#include "engine/topology.h"
#include "sim/adversary/faults.h"
#include "sim/adversary/gossip_attack.h"
#include "sim/net/device.h"
#include "sim/net/links.h"
#include "sim/net/radio_links.h"

namespace murmur::sim {

namespace {

Status Bad(const std::string& field, const std::string& why) {
  return Status::InvalidArgument("scenario field '" + field + "' " + why);
}

}  // namespace

NetworkOptions ScenarioNetwork(const proto::Scenario& s) {
  NetworkOptions n;
  n.message_loss = s.message_loss() > 0 ? s.message_loss() : s.loss();
  n.packet_loss = s.packet_loss();
  n.transport = s.transport() == "ideal" ? LinkTransport::kIdeal : LinkTransport::kTcp;
  n.tcp_idle_restart = s.tcp_slow_start_after_idle();
  n.extra_latency = FromSeconds(s.latency_ms() / 1000);
  n.jitter = s.jitter();
  if (!s.radio_rate().empty()) n.max_queue = FromSeconds(s.radio_queue());
  return n;
}

std::vector<std::string> ScenarioWarnings(const proto::Scenario& s) {
  std::vector<std::string> out;
  if (s.loss() > 0)
    out.push_back(
        "scenario field 'loss' (--loss) is the chance that a whole message is lost, read as "
        "message_loss; for a link's packet loss, which TCP recovers at some cost in rate, set "
        "packet_loss (--packet-loss)");
  return out;
}

namespace {

// What a scenario adds to its job.
Status CheckWorld(const proto::Scenario& s, const engine::JobPlan& plan) {
  const proto::JobSpec& spec = s.spec();
  const bool federated = plan.federated();
  if (!(s.loss() >= 0 && s.loss() < 1)) return Bad("loss", "must be in [0, 1)");
  if (!(s.message_loss() >= 0 && s.message_loss() < 1)) return Bad("message_loss", "must be in [0, 1)");
  if (s.loss() > 0 && s.message_loss() > 0)
    return Bad("loss", "is the old name of message_loss: set one of them, not both");
  if (!(s.packet_loss() >= 0 && s.packet_loss() <= 0.5)) return Bad("packet_loss", "must be in [0, 0.5]");
  if (s.transport() != "tcp" && s.transport() != "ideal")
    return Bad("transport", "'" + s.transport() + "' is not one of tcp, ideal");
  if (s.packet_loss() > 0 && s.transport() != "tcp")
    return Bad("packet_loss",
               "needs transport tcp: an ideal link has no packets to lose (message_loss loses messages)");
  if (!(s.jitter() >= 0 && s.jitter() < 1)) return Bad("jitter", "must be in [0, 1)");
  // A day: far past any link's latency, and what keeps a round's time inside
  // the nanosecond clock (1e300 reached a check of the event loop).
  if (!(s.latency_ms() >= 0 && s.latency_ms() <= 86400000))
    return Bad("latency_ms", "must be in [0, 86400000] ms (a day), got " + std::to_string(s.latency_ms()));
  if (!(s.churn_online() >= 0) || !std::isfinite(s.churn_online()))
    return Bad("churn_online", "must be >= 0 seconds");
  if (!(s.time_budget() >= 0) || !std::isfinite(s.time_budget()))
    return Bad("time_budget", "must be >= 0 seconds");
  if (s.threads() > 1024) return Bad("threads", "must be at most 1024");
  if (s.placement() != "auto" && s.placement() != "graph" && s.placement() != "blocks")
    return Bad("placement", "'" + s.placement() + "' is not one of auto, graph, blocks");
  // Refused whatever the number of ranks, so that a scenario one process
  // accepts also runs under mpirun (docs/simulator.md).
  if (federated && s.placement() == "graph")
    return Bad("placement",
               "graph is for gossip runs: federated runs place clients in id blocks, the server on the last "
               "rank and, with auto, each edge aggregator with its clients (use auto or blocks)");
  if (s.links() != "uniform") {
    if (federated)
      return Bad("links",
                 "shapes the paths between gossip nodes; a federated run's messages all go to or from "
                 "its server (give its clients' links through devices)");
    if (s.links().rfind("trace:", 0) != 0) {  // a trace is read when the world is built
      auto links = MakeLinkModel(s.links(), spec.nodes(), spec.seed());
      if (!links.ok()) return links.status().WithContext("scenario field 'links'");
    }
  }
  if (engine::IsLinkAware(spec.topology()) && s.links() == "uniform" && s.devices() == "uniform")
    return Bad("links",
               "is uniform and so are the devices: " + spec.topology() +
                   " would choose among equal links; give links (sites:, plane: or trace:) or devices");
  MURMUR_RETURN_IF_ERROR(ValidateScenarioFaults(s));
  if (federated && HasScenarioFaults(s))
    return Bad("faults", "apply to gossip algorithms only; federated runs do not inject faults yet");
  if (engine::TopologyKind(spec.topology()) == "vehicles") {
    if (s.rsus() >= spec.nodes()) return Bad("rsus", "must be fewer than nodes");
    if (s.grid_blocks() < 1) return Bad("grid_blocks", "must be at least 1");
    if (!(s.block_m() > 0)) return Bad("block_m", "must be > 0 (topology vehicles)");
    if (!(s.radio_range() > 0)) return Bad("radio_range", "must be > 0 (topology vehicles)");
    if (!(s.round_interval() > 0)) return Bad("round_interval", "must be > 0 (topology vehicles)");
    if (!(s.speed() >= 0)) return Bad("speed", "must be >= 0 (topology vehicles)");
    if (s.sumo_fcd().empty() && !(s.sumo_net().empty() && s.rsu_junctions().empty()))
      return Bad(s.sumo_net().empty() ? "rsu_junctions" : "sumo_net",
                 "is for vehicles from a SUMO trace: give sumo_fcd");
    if (!(s.sumo_begin() >= 0 && s.sumo_begin() <= 1e9))
      return Bad("sumo_begin", "must be in [0, 1e9] seconds");
    if (!s.radio_rate().empty()) {
      MURMUR_RETURN_IF_ERROR(ParseRadioRate(s.radio_rate()).status());
      if (s.links() != "uniform") return Bad("radio_rate", "and links both set a path model: give one");
      if (!(s.radio_queue() > 0 && s.radio_queue() <= 3600))
        return Bad("radio_queue", "must be in (0, 3600] seconds");
    }
    if (s.sumo_fcd().empty() && !(s.contacts_csv().empty() && s.drive_csv().empty()))
      return Bad(s.contacts_csv().empty() ? "drive_csv" : "contacts_csv",
                 "is for vehicles from a SUMO trace: give sumo_fcd");
    if (!s.sumo_fcd().empty() && s.rsus() > 0 && s.sumo_net().empty())
      return Bad("sumo_net", "is needed for rsus > 0 with sumo_fcd (the RSUs stand at its junctions)");
  } else if (!s.sumo_fcd().empty() || !s.radio_rate().empty() || s.contact_aware()) {
    return Bad(!s.sumo_fcd().empty() ? "sumo_fcd" : (s.contact_aware() ? "contact_aware" : "radio_rate"),
               "is for topology vehicles");
  }
  if (federated && spec.edge_aggregators() > 0) {
    if (plan.fed().edge_assignment == engine::FederatedPlan::EdgeAssignment::kNearestRsu &&
        (engine::TopologyKind(spec.topology()) != "vehicles" || s.rsus() != spec.edge_aggregators()))
      return Status::InvalidArgument(
          "spec field 'edge_assignment' nearest-rsu needs topology \"vehicles\" with scenario field rsus = "
          "edge_aggregators (" +
          std::to_string(spec.edge_aggregators()) + ")");
    auto devices = MakeDeviceProfiles(s.edge_devices(), 1, 1);
    if (!devices.ok()) return devices.status().WithContext("scenario field 'edge_devices'");
  }
  return Status::Ok();
}

}  // namespace

Result<ScenarioPlan> PlanScenario(const proto::Scenario& s) {
  MURMUR_ASSIGN_OR_RETURN(engine::JobPlan job, engine::PlanJob(s.spec(), engine::Host::kSimulator));
  MURMUR_RETURN_IF_ERROR(CheckWorld(s, job));
  return ScenarioPlan(s, std::move(job));
}

Status ValidateScenario(const proto::Scenario& s) { return PlanScenario(s).status(); }

}  // namespace murmur::sim
