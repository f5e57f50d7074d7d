#include "sim/world.h"

#include <cmath>
#include <sstream>

#include "engine/model_factory.h"
#include "engine/topology.h"
#include "ml/dataset_spec.h"
#include "sim/byzantine_placement.h"
#include "sim/host_data.h"
#include "sim/runner.h"
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
// over the devices and the link model (sim/links.h).
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

Status BuildVehicleTopology(const proto::Scenario& s, World& w) {
  MobilityOptions mo;
  mo.blocks = s.grid_blocks();
  mo.block_m = s.block_m();
  mo.speed = s.speed();
  mo.radio_range = s.radio_range();
  mo.rsus = s.rsus();
  w.mobility = std::make_unique<ManhattanMobility>(s.spec().nodes(), mo, s.spec().seed());
  bool given = false;
  MURMUR_ASSIGN_OR_RETURN(topology::WeightOptions weights, engine::WeightsFor(s.spec(), &given));
  if (!given) weights.rule = topology::WeightRule::kMetropolisHastings;  // contact graphs are irregular
  ManhattanMobility* mobility = w.mobility.get();
  const double interval = s.round_interval();
  w.topology = std::make_unique<gossip::RoundTopology>([mobility, interval, weights](std::uint64_t t) {
    mobility->Advance(std::max(mobility->time(), static_cast<double>(t) * interval));
    return topology::MakeWeights(mobility->ContactGraph(), weights).value();
  });
  std::ostringstream desc;
  desc << "vehicles on a " << s.grid_blocks() << "x" << s.grid_blocks() << " grid of " << s.block_m()
       << " m blocks, " << s.radio_range() << " m range, " << s.rsus() << " RSUs";
  w.topology_description = desc.str();
  return Status::Ok();
}

// attack_placement attached: the honest graph plus the Byzantine nodes joined to it.
Status AttachByzantineNodes(const proto::Scenario& s, World& w) {
  auto placement = ParseAttackPlacement(s.spec().attack_placement());
  if (!placement.ok()) return placement.status().WithContext("spec field 'attack_placement'");
  const auto f = static_cast<std::size_t>(std::llround(s.spec().attack_fraction() * s.spec().nodes()));
  if (placement.value() != AttackPlacement::kAttached || s.spec().attack() == "none" || f == 0)
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

Result<std::unique_ptr<World>> BuildWorld(const proto::Scenario& s, RankGroup* ranks) {
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
  w->initial = ParamVector(w->model->layout());
  Rng init(s.spec().seed(), 0, RngPurpose::kInit);
  w->model->InitParams(w->initial, init);
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
    MURMUR_RETURN_IF_ERROR(BuildVehicleTopology(s, *w));
  } else {
    MURMUR_RETURN_IF_ERROR(BuildGraphTopology(s, *w));
  }
  MURMUR_RETURN_IF_ERROR(AttachByzantineNodes(s, *w));
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

}  // namespace murmur::sim
