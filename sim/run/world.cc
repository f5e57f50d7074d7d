#include "sim/run/world.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <optional>
#include <sstream>

#include "engine/model_factory.h"
#include "engine/node_kit.h"
#include "engine/topology.h"
#include "ml/dataset_spec.h"
#include "sim/adversary/byzantine_placement.h"
#include "sim/net/radio_links.h"
#include "sim/ranks/host_data.h"
#include "sim/vehicles/manhattan.h"
#include "sim/vehicles/sumo_mobility.h"
#include "topology/weights.h"

namespace murmur::sim {

namespace {

// The partition spec's partitioner (ml/dataset_spec.h), shared with murmurd's local data.
Result<std::unique_ptr<ml::Partition>> MakePartition(const proto::Scenario& s, const ml::Dataset& train) {
  auto made = ml::PartitionBySpec(s.spec().partition(), train, s.spec().nodes(), s.spec().seed());
  if (!made.ok()) return made.status().WithContext("spec field 'partition'");
  return std::make_unique<ml::Partition>(std::move(made).value());
}

Result<std::vector<DeviceProfile>> MakeDevices(const proto::Scenario& s) {
  std::vector<DeviceProfile> devices;
  if (s.devices().rfind("trace:", 0) == 0) {
    MURMUR_ASSIGN_OR_RETURN(devices, ReadDeviceTrace(s.devices().substr(6), s.spec().nodes()));
  } else {
    auto made = MakeDeviceProfiles(s.devices(), s.spec().nodes(), s.spec().seed());
    if (!made.ok()) return made.status().WithContext("scenario field 'devices'");
    devices = std::move(made).value();
  }
  if (s.spec().topology() == "vehicles") {
    // Roadside units are wired edge servers.
    auto rsu = MakeDeviceProfiles("edge-server", s.rsus(), s.spec().seed() + 1).value();
    for (std::uint32_t r = 0; r < s.rsus(); ++r) devices[s.spec().nodes() - s.rsus() + r] = rsu[r];
  }
  return devices;
}

// The link-aware kinds weigh each pair by the seconds one fp32 model takes
// over the devices and the link model (sim/net/links.h).
Status BuildGraphTopology(const proto::Scenario& s, World& w) {
  topology::PairCost cost;
  if (engine::IsLinkAware(s.spec().topology())) {
    const double bits = 8.0 * 4.0 * static_cast<double>(w.initial.size());
    cost = [links = w.links.get(), devices = &w.devices, bits](NodeId u, NodeId v) {
      return PathSeconds(links, *devices, u, v, bits);
    };
  }
  MURMUR_ASSIGN_OR_RETURN(engine::GraphTopology t,
                          engine::MakeGraphTopology(s.spec(), s.spec().nodes(), true, cost));
  w.schedule = std::move(t.schedule);
  w.topology = std::move(t.rounds);
  w.topology_description = std::move(t.description);
  return Status::Ok();
}

// Vehicles from a SUMO trace: read once here (seats, presence, RSUs), then
// streamed again as the rounds advance (and by the radio links, if any);
// presence drives the nodes' churn.
Result<SumoScan> ScanScenarioTrace(const proto::Scenario& s, const RadioOptions& radio, World& w,
                                   std::ostringstream& desc) {
  const SumoSource source{s.sumo_fcd(), s.sumo_net(), s.rsu_junctions(), s.sumo_begin()};
  MURMUR_ASSIGN_OR_RETURN(SumoScan scan, ScanSumo(source, s.spec().nodes(), radio));
  for (const Presence& p : scan.presence) w.churn_trace.push_back({FromSeconds(p.time), p.node, p.online});
  std::stable_sort(w.churn_trace.begin(), w.churn_trace.end(),
                   [](const ChurnEvent& a, const ChurnEvent& b) { return a.time < b.time; });
  desc << "vehicles from SUMO trace " << s.sumo_fcd() << " (" << scan.timesteps << " timesteps, "
       << scan.begin << "-" << scan.end << " s";
  if (s.sumo_begin() > 0) desc << ", from " << s.sumo_begin() << " s on";
  desc << "; " << scan.trips << " trips, at most " << scan.most_at_once << " at once";
  if (scan.unseated > 0) desc << ", " << scan.unseated << " not simulated for want of a free node";
  desc << "), " << s.radio_range() << " m range, " << s.rsus() << " RSUs";
  for (std::size_t r = 0; r < scan.rsus.size() && r < 8; ++r)
    desc << (r == 0 ? " at " : ", ") << scan.rsus[r].id;
  if (scan.rsus.size() > 8) desc << ", ...";
  return scan;
}

// One round's message for contact-aware scheduling: the initial model
// through the job's codec (a gossip run), or dense fp32.
double MessageBits(const engine::JobPlan& plan, const World& w) {
  const gossip::CodecSpec& codec = plan.message_codec();
  if (codec.compressor == nullptr) return 32.0 * static_cast<double>(w.initial.size());
  compression::CompressorState state;
  Rng rng(plan.spec().seed(), 0, RngPurpose::kInit);
  return 8.0 * static_cast<double>(codec.compressor->Compress(w.initial, state, rng)->EncodedSize());
}

// The contacts_csv writer: one row per round (RoundContacts::Counts).
Result<std::function<void(const RoundContacts::Counts&)>> ContactsWriter(const proto::Scenario& s) {
  auto out = std::make_shared<std::ofstream>(s.contacts_csv());
  if (!*out)
    return Status::InvalidArgument("scenario field 'contacts_csv': cannot write " + s.contacts_csv());
  *out << "round,time_s,trace_time_s,vehicles,v2v_links,rsu_links,used_links\n";
  return std::function<void(const RoundContacts::Counts&)>(
      [out, begin = s.sumo_begin()](const RoundContacts::Counts& c) {
        *out << c.round << ',' << c.time << ',' << c.time + begin << ',' << c.on_road << ',' << c.v2v << ','
             << c.v2rsu << ',' << c.kept << '\n';
        out->flush();
      });
}

// The drive_csv writer: each round, each node's peers in range and its
// radio's rate to the nearest of them (tools/netbed/netbed.sh netbed_drive
// plays it on the test bed).
Result<std::function<void(const RoundContacts::Counts&)>> DriveWriter(const proto::Scenario& s,
                                                                      RadioRate rate,
                                                                      const RadioOptions& radio) {
  auto out = std::make_shared<std::ofstream>(s.drive_csv());
  if (!*out) return Status::InvalidArgument("scenario field 'drive_csv': cannot write " + s.drive_csv());
  *out << "time_s,node,on_road,mbps,peers\n";
  return std::function<void(const RoundContacts::Counts&)>(
      [out, rate, radio](const RoundContacts::Counts& c) {
        const topology::Graph& g = *c.contacts;
        const auto& p = *c.positions;
        const NodeId cars = g.num_nodes() - radio.rsus;
        for (NodeId v = 0; v < g.num_nodes(); ++v) {
          double nearest = -1, range = radio.radio_range;
          std::ostringstream peers;
          for (NodeId w : g.Neighbors(v)) {
            peers << (peers.tellp() > 0 ? " " : "") << w;
            if (v >= cars && w >= cars) continue;  // wired
            const double d = std::hypot(p[v].x - p[w].x, p[v].y - p[w].y);
            if (nearest < 0 || d < nearest) {
              nearest = d;
              range = radio.LinkRange(v >= cars || w >= cars);
            }
          }
          const double mbps = nearest < 0 || !rate.on() ? 0 : rate.At(std::min(nearest, range), range) / 1e6;
          *out << c.time << ',' << v << ',' << int{(*c.present)[v] != 0} << ',' << mbps << ',' << peers.str()
               << '\n';
        }
        out->flush();
      });
}

Status BuildVehicleTopology(const proto::Scenario& s, const engine::JobPlan& plan, World& w,
                            bool write_files) {
  RadioOptions radio;
  radio.radio_range = s.radio_range();
  radio.rsus = s.rsus();
  std::ostringstream desc;
  bool given = false;
  MURMUR_ASSIGN_OR_RETURN(topology::WeightOptions weights, engine::WeightsFor(s.spec(), &given));
  if (!given) weights.rule = topology::WeightRule::kMetropolisHastings;  // contact graphs are irregular
  const double interval = s.round_interval();
  if (!s.radio_rate().empty()) {
    MURMUR_ASSIGN_OR_RETURN(w.radio_rate, ParseRadioRate(s.radio_rate()));
  }
  const RadioRate rate = w.radio_rate;
  std::optional<ContactAware> aware;
  if (s.contact_aware()) {
    aware.emplace();
    aware->message_bits = MessageBits(plan, w);
    aware->round_seconds = s.round_interval();
    aware->radio = rate;
    for (const DeviceProfile& d : w.devices) aware->up_bps.push_back(d.up_bps);
  }
  // Each user of positions advances a mobility of its own (the rounds, the
  // federated RSU assignment, the radio links), each from the same source.
  std::function<Result<std::unique_ptr<Mobility>>()> make;
  if (!s.sumo_fcd().empty()) {
    MURMUR_ASSIGN_OR_RETURN(SumoScan scan, ScanScenarioTrace(s, radio, w, desc));
    const SumoSource source{s.sumo_fcd(), s.sumo_net(), s.rsu_junctions(), s.sumo_begin()};
    const NodeId nodes = s.spec().nodes();
    make = [source, nodes, radio, scan]() -> Result<std::unique_ptr<Mobility>> {
      MURMUR_ASSIGN_OR_RETURN(auto m, SumoMobility::Open(source, nodes, radio, scan));
      return std::unique_ptr<Mobility>(std::move(m));
    };
    MURMUR_ASSIGN_OR_RETURN(auto sumo, SumoMobility::Open(source, nodes, radio, scan));
    std::function<void(const RoundContacts::Counts&)> contacts, drive, observer;
    if (!s.contacts_csv().empty() && write_files) {
      MURMUR_ASSIGN_OR_RETURN(contacts, ContactsWriter(s));
    }
    if (!s.drive_csv().empty() && write_files) {
      MURMUR_ASSIGN_OR_RETURN(drive, DriveWriter(s, rate, radio));
    }
    if (contacts || drive) {
      observer = [contacts, drive](const RoundContacts::Counts& c) {
        if (contacts) contacts(c);
        if (drive) drive(c);
      };
    }
    auto rounds = std::make_shared<RoundContacts>(sumo.get(), interval, std::move(observer), aware);
    w.mobility = std::move(sumo);
    w.topology = std::make_unique<gossip::RoundTopology>(
        [rounds, weights](std::uint64_t t) { return topology::MakeWeights(rounds->At(t), weights).value(); });
  } else {
    GridOptions grid;
    grid.blocks = s.grid_blocks();
    grid.block_m = s.block_m();
    grid.speed = s.speed();
    const NodeId nodes = s.spec().nodes();
    const std::uint64_t seed = s.spec().seed();
    make = [nodes, grid, radio, seed]() -> Result<std::unique_ptr<Mobility>> {
      return std::unique_ptr<Mobility>(std::make_unique<ManhattanMobility>(nodes, grid, radio, seed));
    };
    MURMUR_ASSIGN_OR_RETURN(w.mobility, make());
    desc << "vehicles on a " << s.grid_blocks() << "x" << s.grid_blocks() << " grid of " << s.block_m()
         << " m blocks, " << s.radio_range() << " m range, " << s.rsus() << " RSUs";
    Mobility* mobility = w.mobility.get();
    w.topology = std::make_unique<gossip::RoundTopology>([mobility, interval, weights,
                                                          aware](std::uint64_t t) {
      mobility->Advance(std::max(mobility->time(), static_cast<double>(t) * interval));
      topology::Graph g = mobility->ContactGraph();
      if (aware)
        g = KeepLastingContacts(g, mobility->positions(), mobility->velocities(), mobility->radio(), *aware);
      return topology::MakeWeights(g, weights).value();
    });
  }
  if (rate.on()) {
    MURMUR_ASSIGN_OR_RETURN(std::unique_ptr<Mobility> own, make());
    w.links = std::make_shared<RadioLinks>(std::move(own), rate);  // the run's description names it
  }
  if (aware) desc << ", contact-aware";
  w.topology_description = desc.str();
  return Status::Ok();
}

// attack_placement attached: the honest graph plus the Byzantine nodes joined to it.
Status AttachByzantineNodes(const proto::Scenario& s, const engine::JobPlan& plan, World& w) {
  const auto f = static_cast<std::size_t>(std::llround(s.spec().attack_fraction() * s.spec().nodes()));
  if (plan.federated() || plan.gossip().placement != AttackPlacement::kAttached ||
      plan.gossip().attack == engine::GossipAttack::kNone || f == 0)
    return Status::Ok();
  if (w.schedule == nullptr || w.schedule->period() != 1 || w.schedule->At(0).SupportGraph().directed()) {
    return Status::InvalidArgument(
        "spec field 'attack_placement': attached needs a static undirected graph (got '" +
        s.spec().topology() + "')");
  }
  const bool dumbbell = engine::TopologyKind(s.spec().topology()) == "dumbbell";
  if (dumbbell && s.spec().nodes() < 2)
    return Status::InvalidArgument("spec field 'attack_placement': a dumbbell of 1 node has no bridge");
  AttachedGraph a = AttachByzantine(w.schedule->At(0).SupportGraph(), f, dumbbell, s.spec().seed());
  bool given = false;
  MURMUR_ASSIGN_OR_RETURN(topology::WeightOptions weights, engine::WeightsFor(s.spec(), &given));
  if (!given) weights = AttachedWeights(dumbbell);
  auto m = topology::MakeWeights(a.graph, weights);
  if (!m.ok()) return m.status().WithContext("spec field 'attack_placement'");
  std::ostringstream desc;
  desc << w.topology_description << ", " << f << " Byzantine nodes attached to";
  for (std::size_t k = 0; k < f && k < 8; ++k) desc << (k == 0 ? " " : ", ") << a.targets[k];
  if (f > 8) desc << ", ...";
  desc << " (" << topology::WeightOptionsName(weights) << " weights)";
  w.topology_description = desc.str();
  w.topology = std::make_unique<gossip::RoundTopology>(std::move(m).value());
  for (NodeId t : a.targets) w.devices.push_back(w.devices[t]);
  w.attached_to = std::move(a.targets);
  return Status::Ok();
}

}  // namespace

Result<std::unique_ptr<World>> BuildWorld(const ScenarioPlan& plan, RankGroup* ranks) {
  const proto::Scenario& s = plan.scenario();
  auto w = std::make_unique<World>();
  auto load = [&s] { return ml::LoadDatasetSpec(s.spec().dataset(), s.spec().data_dir(), s.spec().seed()); };
  std::unique_ptr<RankGroup> own;
  auto data = LoadOncePerHost(load, *RanksOr(ranks, own));
  if (FailedOnAnotherRank(data.status())) return data.status();
  if (!data.ok()) return data.status().WithContext("spec field 'dataset'");
  w->data = std::move(data).value();
  if (static_cast<std::uint64_t>(w->data.train.num_samples) < s.spec().nodes() &&
      s.spec().partition() != "iid") {
    return Status::InvalidArgument("scenario: " + std::to_string(s.spec().nodes()) + " nodes but only " +
                                   std::to_string(w->data.train.num_samples) + " training samples");
  }
  MURMUR_ASSIGN_OR_RETURN(w->partition, MakePartition(s, w->data.train));
  auto model = engine::MakeJobModel(s.spec(), w->data.train.sample_shape(), w->data.train.num_classes, "",
                                    /*require_hash=*/false);
  if (!model.ok()) return model.status().WithContext("spec field 'model'");
  MURMUR_RETURN_IF_ERROR(engine::CheckModelForData(**model, w->data.train).WithContext("spec field 'model'"));
  w->model = std::move(model).value();
  w->initial = engine::InitialModel(plan.job(), *w->model);
  MURMUR_ASSIGN_OR_RETURN(w->devices, MakeDevices(s));
  auto links = MakeLinkModel(s.links(), s.spec().nodes(), s.spec().seed());
  if (!links.ok()) return links.status().WithContext("scenario field 'links'");
  w->links = std::move(links).value();
  if (!s.churn_trace().empty()) {
    auto trace = ReadChurnTrace(s.churn_trace(), s.spec().nodes());
    if (!trace.ok()) return trace.status().WithContext("scenario field 'churn_trace'");
    w->churn_trace = std::move(trace).value();
  }
  if (s.spec().topology() == "vehicles") {
    MURMUR_RETURN_IF_ERROR(BuildVehicleTopology(s, plan.job(), *w, ranks == nullptr || ranks->rank() == 0));
  } else {
    MURMUR_RETURN_IF_ERROR(BuildGraphTopology(s, *w));
  }
  MURMUR_RETURN_IF_ERROR(AttachByzantineNodes(s, plan.job(), *w));
  return w;
}

void StartScenarioChurn(Simulator& sim, const proto::Scenario& s, const World& world, Nanos horizon,
                        const ChurnCallback& on_change, bool every_node) {
  if (s.churn_online() > 0) {
    ChurnOptions co;
    co.mean_online = FromSeconds(s.churn_online());
    StartMarkovChurn(sim, co, horizon, on_change, every_node);
  }
  if (!world.churn_trace.empty()) StartTraceChurn(sim, world.churn_trace, on_change, every_node);
}

// round_timeout 0 in the simulator: 4 times the slowest node's round in the
// device and link model, so that only a lost message or an offline
// neighbour makes a node wait it out: its local steps at its compute speed,
// a whole fp32 model (the most it sends) to each out-neighbour over its
// uplink (at each path's rate in the link model) and from each in-neighbour
// over its downlink, and both ends' latency plus the slowest path's with the
// worst jitter; at least 50 ms.
Nanos FittedRoundTimeout(const World& w, const proto::Scenario& s, NodeId nodes, double flops) {
  const double bits = 8.0 * (4.0 * static_cast<double>(w.initial.size()) + 64);
  double slowest = 0.05;
  const LinkModel* links = w.links.get();
  for (NodeId i = 0; i < nodes; ++i) {
    const DeviceProfile& d = w.devices[i];
    const double in = static_cast<double>(w.topology->In(0).Row(i).size());
    double up = 0, path_latency = 0;  // the uplink's time for one model to each out-neighbour
    for (const topology::MixingEntry& e : w.topology->Out(0).Row(i)) {
      const double rate = links == nullptr ? d.up_bps : std::min(d.up_bps, links->Bps(i, e.col));
      up += bits / rate;
      if (links != nullptr)
        path_latency =
            std::max(path_latency, std::chrono::duration<double>(links->Latency(i, e.col)).count());
    }
    const double latency =
        2 * std::chrono::duration<double>(d.latency).count() + s.latency_ms() / 1000 + path_latency;
    const double round = flops / d.flops_per_s + up + in * bits / d.down_bps + latency * (1 + s.jitter());
    slowest = std::max(slowest, round);
  }
  return FromSeconds(4 * slowest);
}

}  // namespace murmur::sim
