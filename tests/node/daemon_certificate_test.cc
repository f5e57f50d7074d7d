// murmurd taking a renewed certificate without a restart (docs/daemon.md
// "Certificate renewal"): through `murmur cert reload` (the control request)
// on idle daemons, bad renewals refused with the old certificate kept, and a
// running D-PSGD job that goes on across the old not_after to the simulator's
// models, bit for bit.
#include <doctest/doctest.h>

#include <filesystem>
#include <sstream>
#include <thread>

#include "crypto/certificate.h"
#include "tests/node/daemon_cluster.h"
#include "tests/node/fed_fleet.h"

namespace murmur::node {
namespace {

namespace fs = std::filesystem;
using testing::Creds;
using testing::UnixNow;
using testing::WaitFor;

// The value of `name` in Prometheus text, or -1.
double Metric(const std::string& text, const std::string& name) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(name + " ", 0) == 0) return std::stod(line.substr(name.size() + 1));
  }
  return -1;
}

// A certificate for identity `who` (the fleets' seeds: node i is i + 1) signed by `coordinator`.
crypto::Certificate Renewal(const crypto::Identity& coordinator, std::uint8_t who, std::uint64_t serial,
                            const std::string& network = "fleet", std::int64_t valid_for = 3600) {
  crypto::Certificate c;
  c.node_key = testing::Seeded(who).public_key();
  c.node_id = who - 1u;
  c.network_id = network;
  c.roles = crypto::kRoleNode;
  c.serial = serial;
  c.not_before = UnixNow() - 60;
  c.not_after = UnixNow() + valid_for;
  REQUIRE(crypto::SignCertificate(coordinator, &c).ok());
  return c;
}

void SleepPast(std::int64_t not_after) {
  while (UnixNow() < not_after + 1) std::this_thread::sleep_for(std::chrono::milliseconds(50));
}

TEST_CASE(
    "murmur cert reload: a daemon refuses bad renewals keeping its certificate, takes a good one, and its "
    "sessions and membership outlive the old certificate") {
  // Three idle daemons; node 1's certificate expires 4-5 s after start.
  constexpr std::int64_t kValidFor = 5;
  std::int64_t old_not_after = 0;
  testing::FedFleet fleet(3, [&](NodeId i, proto::NodeConfig& c) {
    if (i != 1) return;
    const crypto::Credentials short_lived =
        Creds(testing::Seeded(60), 2, "fleet", kValidFor, crypto::kRoleNode, 1);
    old_not_after = short_lived.certificate.not_after;
    REQUIRE(crypto::SaveCertificateFile(c.data_dir() + "/node.cert", short_lived.certificate).ok());
  });
  const std::string cert_path = (fleet.root / "n1" / "node.cert").string();
  auto metrics = [&](NodeId i) {
    proto::ControlRequest r;
    r.mutable_metrics();
    auto m = fleet.Call(i, r);
    REQUIRE_MESSAGE(m.ok(), m.status().ToString());
    return m->metrics();
  };
  REQUIRE(WaitFor([&] {
    for (NodeId i = 0; i < 3; ++i)
      if (Metric(metrics(i), "murmur_peers_connected") != 2) return false;
    return true;
  }));
  proto::ControlRequest reload;
  reload.mutable_cert_reload();

  // Bad renewals: another network, another coordinator, expired, no file.
  struct Bad {
    const char* name;
    std::optional<crypto::Certificate> cert;  // nullopt: the file is removed
    const char* says;
  };
  const Bad bad[] = {
      {"another network", Renewal(fleet.coordinator, 2, 20, "lab"), "network 'lab'"},
      {"another coordinator", Renewal(testing::Seeded(61), 2, 21), "bad signature"},
      {"another node's key", Renewal(fleet.coordinator, 3, 22), "node key"},
      {"expired", Renewal(fleet.coordinator, 2, 23, "fleet", -5), "expired"},
      {"unreadable", std::nullopt, "no such file"},
  };
  for (const Bad& b : bad) {
    CAPTURE(b.name);
    if (b.cert) {
      REQUIRE(crypto::SaveCertificateFile(cert_path, *b.cert).ok());
    } else {
      fs::remove(cert_path);
    }
    auto r = fleet.Call(1, reload);
    REQUIRE_MESSAGE(r.ok(), r.status().ToString());
    CHECK_FALSE(r->ok());
    CHECK(r->error().find(b.says) != std::string::npos);
    CHECK(r->error().find(cert_path) != std::string::npos);
    CHECK(r->certificate().find("serial 2,") == 0);  // still the one it started with
  }
  CHECK(Metric(metrics(1), "murmur_certificate_reload_failures_total") == 5);
  CHECK(Metric(metrics(1), "murmur_certificate_not_after_seconds") == static_cast<double>(old_not_after));

  // The renewal, before the old certificate expires.
  const crypto::Certificate renewed = Renewal(fleet.coordinator, 2, 2000);
  REQUIRE(crypto::SaveCertificateFile(cert_path, renewed).ok());
  auto r = fleet.Call(1, reload);
  REQUIRE_MESSAGE(r.ok(), r.status().ToString());
  CHECK_MESSAGE(r->ok(), r->error());
  CHECK(r->certificate().find("serial 2000,") == 0);
  REQUIRE(UnixNow() < old_not_after);
  CHECK(fleet.daemons[1]->ReloadCertificate().ok());  // the same file again: unchanged, not an error

  SleepPast(old_not_after);
  const std::string m1 = metrics(1);
  CHECK(Metric(m1, "murmur_certificate_reloads_total") == 1);
  CHECK(Metric(m1, "murmur_certificate_reload_failures_total") == 5);
  CHECK(Metric(m1, "murmur_certificate_not_after_seconds") == static_cast<double>(renewed.not_after));
  CHECK(Metric(m1, "murmur_certificates_presented_total") == 2);  // one per open session
  for (NodeId i = 0; i < 3; ++i) {
    CAPTURE(i);
    const std::string m = metrics(i);
    CHECK(Metric(m, "murmur_sessions_expired_total") == 0);
    CHECK(Metric(m, "murmur_peers_connected") == 2);
    CHECK(Metric(m, "murmur_peers_alive") == 2);
    CHECK(Metric(m, "murmur_peers_suspected") == 0);
    CHECK(Metric(m, "murmur_peers_dead") == 0);
    CHECK(Metric(m, "murmur_peer_certificate_updates_total") == (i == 1 ? 0 : 1));
    CHECK(Metric(m, "murmur_peer_certificate_updates_refused_total") == 0);
  }
}

TEST_CASE("A D-PSGD job runs across a renewed certificate's old not_after to the simulator's models") {
  // Four daemons, D-PSGD on a ring for 100 rounds, every message delayed
  // 50 ms (so the job lasts over 5 s); daemon 2's certificate expires 3-4 s
  // after the start and is renewed after 1 s. A session closed at the old
  // expiry could lose a model on the wire; the job would then differ from
  // the simulator's or wait out its round timeout.
  constexpr std::uint64_t kRounds = 100;
  testing::Cluster cluster;
  cluster.tweak = [](NodeId, proto::NodeConfig& c) {
    c.set_fault_injection(true);
    c.mutable_faults()->set_delay(0.05);
  };
  const auto coordinator = testing::Seeded(100);
  const std::string cert_path = (cluster.root / testing::NodeDir(2) / "node.cert").string();
  const crypto::Credentials short_lived = Creds(coordinator, 3, "fleet", 4, crypto::kRoleNode, 2);
  REQUIRE(crypto::SaveCertificateFile(cert_path, short_lived.certificate).ok());
  // A probed port another process took in between: probe afresh and start over.
  std::vector<std::unique_ptr<Daemon>> ds;
  for (int attempt = 0; attempt < 5 && ds.size() < testing::Cluster::kNodes; ++attempt) {
    ds.clear();
    if (attempt > 0) cluster.ports = testing::FreeLoopbackPorts(cluster.ports.size());
    for (NodeId i = 0; i < testing::Cluster::kNodes; ++i) {
      auto d = Daemon::Create(cluster.Config(i, kRounds));
      if (!d.ok() && d.status().message().find("in use") != std::string::npos) break;
      REQUIRE_MESSAGE(d.ok(), d.status().ToString());
      ds.push_back(std::move(d).value());
    }
  }
  REQUIRE(ds.size() == testing::Cluster::kNodes);
  std::vector<std::thread> threads;
  for (auto& d : ds) threads.emplace_back([&d] { CHECK(d->Run().ok()); });
  std::this_thread::sleep_for(std::chrono::seconds(1));
  REQUIRE(crypto::SaveCertificateFile(cert_path, Renewal(coordinator, 3, 3000)).ok());
  const Status reloaded = ds[2]->ReloadCertificate();
  CHECK_MESSAGE(reloaded.ok(), reloaded.ToString());
  const bool before_expiry = UnixNow() < short_lived.certificate.not_after;
  for (auto& t : threads) t.join();
  const std::int64_t ended = UnixNow();
  CHECK(before_expiry);
  CHECK(ended > short_lived.certificate.not_after);  // the job did run past the old not_after
  const auto simulated = testing::Simulate(cluster.Config(0, kRounds));
  for (NodeId i = 0; i < testing::Cluster::kNodes; ++i) {
    CAPTURE(i);
    CHECK(ds[i]->rounds_done() == kRounds);
    CHECK(ds[i]->params() == simulated[i]);
  }
}

}  // namespace
}  // namespace murmur::node
