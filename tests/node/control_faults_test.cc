// Fault injection through the control port (murmur fault set|clear): the
// rules a FaultConfig becomes, and daemons that enable it or refuse it.
#include <doctest/doctest.h>

#include <sstream>
#include <string>

#include "core/fault_plan.h"
#include "engine/faults.h"
#include "node/config.h"
#include "node/control/client.h"
#include "tests/node/control_fleet.h"

namespace murmur::node {
namespace {

// The value of `name` in Prometheus text, or -1.
double MetricValue(const std::string& text, const std::string& name) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(name + " ", 0) == 0) return std::stod(line.substr(name.size() + 1));
  }
  return -1;
}

// A daemon's faults (engine/faults.h): its partition holds until cleared.
Status ApplyDaemonFaults(const proto::FaultConfig& f, FaultPlan& plan) {
  return engine::ApplyFaults(f, engine::kMaxFaultNodeId, engine::FaultTime::kUntilCleared, plan);
}

TEST_CASE(
    "A FaultConfig becomes one rule for every link and a partition until cleared and bad ones are named") {
  proto::FaultConfig f;
  f.set_drop(0.25);
  f.set_delay(0.05);
  f.set_partition("0-3|4-7");
  FaultPlan plan;
  REQUIRE(ApplyDaemonFaults(f, plan).ok());
  CHECK(plan.FaultsFor(2, 9, Nanos(0)).drop == 0.25);
  CHECK(plan.FaultsFor(2, 9, Nanos(0)).delay == std::chrono::milliseconds(50));
  CHECK(plan.Partitioned(0, 4, Nanos(0)));
  CHECK(plan.Partitioned(7, 3, std::chrono::hours(1)));
  CHECK_FALSE(plan.Partitioned(0, 3, Nanos(0)));
  CHECK_FALSE(plan.Partitioned(0, 8, Nanos(0)));  // node 8 is in no group
  CHECK(engine::DescribeFaults(f) == "drop 0.25, delay s 0.05, partition 0-3|4-7");
  // Replacing: what the new config leaves out is gone.
  REQUIRE(ApplyDaemonFaults(proto::FaultConfig{}, plan).ok());
  CHECK_FALSE(plan.Partitioned(0, 4, Nanos(0)));
  CHECK(plan.FaultsFor(2, 9, Nanos(0)).drop == 0);
  CHECK(engine::DescribeFaults(proto::FaultConfig{}) == "none");

  const std::pair<std::string, std::string> bad[] = {
      {"drop 1", "'drop' must be in [0, 1)"},
      {"partition 0-3|2-5", "node 2 is in two partition groups"},
      {"partition 0-3", "at least two groups"},
      {"partition 0|1@10s-20s", "no @ window"},
      {"partition 0|70000", "not below the 65536 nodes"},
      {"delay -1", "'delay' must be in [0, 86400] seconds"},
  };
  for (const auto& [what, expect] : bad) {
    CAPTURE(what);
    proto::FaultConfig b;
    const std::string value = what.substr(what.find(' ') + 1);
    if (what.rfind("drop", 0) == 0) b.set_drop(std::stod(value));
    if (what.rfind("delay", 0) == 0) b.set_delay(std::stod(value));
    if (what.rfind("partition", 0) == 0) b.set_partition(value);
    FaultPlan untouched;
    REQUIRE(untouched.SetManualPartition({{0}, {1}}).ok());
    Status st = ApplyDaemonFaults(b, untouched);
    CHECK(st.code() == StatusCode::kInvalidArgument);
    CHECK_MESSAGE(st.ToString().find(expect) != std::string::npos, st.ToString());
    CHECK(untouched.Partitioned(0, 1, Nanos(0)));  // an error leaves the plan as it was
  }
  proto::NodeConfig c;
  c.set_node_id(0);
  c.set_data_dir("/tmp/x");
  c.set_network_id("n");
  c.set_coordinator_key("k");
  c.mutable_faults()->set_drop(0.1);
  CHECK(ValidateNodeConfig(c).ToString().find("needs 'fault_injection: true'") != std::string::npos);
}

TEST_CASE(
    "murmur fault set and clear: refused without fault_injection and a partition cuts sends until cleared") {
  Fleet fleet({1, 2});
  proto::ControlRequest set;
  set.mutable_fault_set()->mutable_faults()->set_partition("0|1-2");
  auto off = fleet.Call(0, set);
  REQUIRE(off.ok());
  CHECK_FALSE(off->ok());
  CHECK(off->error().find("fault_injection") != std::string::npos);
  proto::ControlRequest bad;
  bad.mutable_fault_set()->mutable_faults()->set_duplicate(2);
  auto refused = fleet.Call(1, bad);
  REQUIRE(refused.ok());
  CHECK_FALSE(refused->ok());
  CHECK(refused->error().find("'duplicate'") != std::string::npos);

  proto::ControlRequest metrics;
  metrics.mutable_metrics();
  auto value = [&](NodeId i, const char* name) {
    auto r = fleet.Call(i, metrics);
    REQUIRE(r.ok());
    return MetricValue(r->metrics(), name);
  };
  CHECK(value(0, "murmur_fault_partitioned_total") == -1);  // no FaultyEnv on daemon 0
  CHECK(value(1, "murmur_fault_partitioned_total") == 0);
  for (NodeId i : {1u, 2u}) {
    auto r = fleet.Call(i, set);
    REQUIRE(r.ok());
    REQUIRE_MESSAGE(r->ok(), r->error());
    CHECK(r->faults() == "partition 0|1-2");
  }
  // Membership probes node 0 every period or two (3 members, T' = 1 s): they are cut now.
  REQUIRE(
      fleet.Poll([&] { return value(1, "murmur_fault_partitioned_total") >= 1; }, std::chrono::seconds(10)));
  proto::ControlRequest clear;
  clear.mutable_fault_clear();
  for (NodeId i : {1u, 2u}) {
    auto r = fleet.Call(i, clear);
    REQUIRE(r.ok());
    REQUIRE_MESSAGE(r->ok(), r->error());
    CHECK(r->faults() == "none");
  }
  const double cut = value(1, "murmur_fault_partitioned_total");
  const double sent = value(1, "murmur_fault_sent_total");
  std::this_thread::sleep_for(std::chrono::seconds(3));
  CHECK(value(1, "murmur_fault_sent_total") > sent);         // still sending
  CHECK(value(1, "murmur_fault_partitioned_total") == cut);  // and nothing is cut
}

}  // namespace
}  // namespace murmur::node
