// Cost of one SecAgg+ round against plain FedAvg, per client and at the
// aggregator: bytes (EncodedSize of every message) and CPU time (thread CPU
// clock around each party's own calls). All parties run in this process on
// ManualEnvs; messages travel as bytes (EncodeTo, then Decode), as between
// daemons. Usage: secagg_cost [clients] [length] [neighbours] [dropout]
// (defaults 100 7852 0 0.1; 7852 = softmax on 784 features and 10 classes, plus
// the weight and loss slots). Prints one table row per protocol.
#include <time.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <set>
#include <vector>

#include "compression/update.h"
#include "core/manual_env.h"
#include "crypto/identity.h"
#include "federated/messages.h"
#include "federated/secagg_client.h"
#include "federated/secagg_server.h"

namespace {

using namespace murmur;
using namespace murmur::federated;

double CpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

struct Cost {
  double cpu = 0;
  std::size_t up = 0, down = 0;
};

void Secure(NodeId n, std::size_t d, std::size_t k, double dropout) {
  std::vector<std::unique_ptr<ManualEnv>> envs;
  std::vector<crypto::Identity> ids;
  for (NodeId i = 0; i <= n; ++i) {
    envs.push_back(std::make_unique<ManualEnv>(i, 1));
    std::array<std::uint8_t, 32> s{};
    s[0] = static_cast<std::uint8_t>(i);
    s[1] = static_cast<std::uint8_t>(i >> 8);
    ids.push_back(crypto::Identity::FromSeed(s));
  }
  SignKeyDirectory dir = [&ids, n](NodeId id) -> const crypto::SignPublicKey* {
    return id < n ? &ids[id].public_key() : nullptr;
  };
  SecAggParams p;
  p.neighbours = k;
  std::set<NodeId> silent;
  Rng rng(7);
  for (NodeId i = 0; i < n; ++i) {
    if (rng.Bernoulli(dropout)) silent.insert(i);
  }
  std::vector<std::unique_ptr<SecAggClient>> clients;
  for (NodeId i = 0; i < n; ++i) {
    SecAggClientOptions co;
    co.params = p;
    co.identity = &ids[i];
    co.directory = dir;
    co.silent_after_share_keys = silent.count(i) > 0;
    clients.push_back(std::make_unique<SecAggClient>(*envs[i], n, 1, co));
  }
  SecAggServerOptions so;
  so.params = p;
  so.length = d;
  so.key_timeout = std::chrono::seconds(1);
  so.input_timeout = std::chrono::seconds(1);
  so.directory = dir;
  std::vector<NodeId> all;
  for (NodeId i = 0; i < n; ++i) all.push_back(i);
  bool done = false;
  Status status;
  SecAggServer server(*envs[n], 1, all, so, [&](SecAggOutcome o) {
    done = true;
    status = o.status;
  });
  std::vector<Cost> cost(n + 1);
  std::vector<double> input(d, 0.01);
  auto timed = [&](NodeId who, auto&& fn) {
    const double t0 = CpuSeconds();
    fn();
    cost[who].cpu += CpuSeconds() - t0;
  };
  for (NodeId i = 0; i < n; ++i) timed(i, [&] { clients[i]->Start(); });
  timed(n, [&] { server.Start(); });
  for (NodeId i = 0; i < n; ++i) timed(i, [&] { clients[i]->SetInput(input); });
  for (int spin = 0; spin < 20 && !done; ++spin) {
    bool moved = true;
    while (moved) {
      moved = false;
      for (NodeId from = 0; from <= n; ++from) {
        auto sent = std::move(envs[from]->outbox());
        envs[from]->outbox().clear();
        for (auto& s : sent) {
          moved = true;
          std::vector<std::uint8_t> bytes;
          timed(from, [&] { s.msg->EncodeTo(bytes); });
          cost[from].up += bytes.size();
          cost[s.to].down += bytes.size();
          std::shared_ptr<const SecAggMessage> m;
          timed(s.to, [&] { m = SecAggMessage::Decode(bytes).value(); });
          if (s.to == n) {
            timed(n, [&] { server.OnMessage(from, *m); });
          } else {
            timed(s.to, [&] { clients[s.to]->OnMessage(from, *m); });
          }
        }
      }
    }
    if (!done) timed(n, [&] { envs[n]->AdvanceBy(std::chrono::seconds(1)); });
  }
  Cost mean;
  std::size_t m = 0;
  for (NodeId i = 0; i < n; ++i) {
    if (silent.count(i)) continue;
    mean.cpu += cost[i].cpu;
    mean.up += cost[i].up;
    mean.down += cost[i].down;
    ++m;
  }
  std::printf("| SecAgg+ k=%zu | %u | %zu | %zu | %.1f | %.0f | %.0f | %.2f | %.0f | %.0f | %s |\n", k, n,
              silent.size(), d, 1e3 * mean.cpu / static_cast<double>(m),
              static_cast<double>(mean.up) / static_cast<double>(m),
              static_cast<double>(mean.down) / static_cast<double>(m), 1e3 * cost[n].cpu,
              static_cast<double>(cost[n].down), static_cast<double>(cost[n].up),
              status.ok() ? "ok" : "aborted");
}

void Plain(NodeId n, std::size_t d, double dropout) {
  // Each surviving client encodes a dense fp32 result; the server decodes it and
  // accumulates w Delta in double (FedServer's streaming FedAvg).
  Rng rng(7);
  std::vector<float> delta(d - 2, 0.01f);
  std::vector<double> acc(d - 2, 0.0);
  std::vector<float> scratch(d - 2);
  double client_cpu = 0, server_cpu = 0;
  std::size_t up = 0, m = 0;
  for (NodeId i = 0; i < n; ++i) {
    if (rng.Bernoulli(dropout)) continue;
    ++m;
    double t0 = CpuSeconds();
    FedHeader h;
    h.kind = FedKind::kResult;
    h.weight = 1;
    FedMessage msg(h, {compression::DenseF32Update(delta)});
    std::vector<std::uint8_t> bytes;
    msg.EncodeTo(bytes);
    client_cpu += CpuSeconds() - t0;
    up += bytes.size();
    t0 = CpuSeconds();
    auto back = FedMessage::Decode(bytes, {}).value();
    std::fill(scratch.begin(), scratch.end(), 0.0f);
    if (!back->updates()[0]->AddTo(scratch).ok()) std::abort();
    for (std::size_t j = 0; j < acc.size(); ++j) acc[j] += back->header().weight * scratch[j];
    server_cpu += CpuSeconds() - t0;
  }
  std::printf("| plain FedAvg | %u | %u | %zu | %.3f | %.0f | 0 | %.2f | %.0f | 0 | ok |\n", n,
              n - static_cast<NodeId>(m), d - 2, 1e3 * client_cpu / static_cast<double>(m),
              static_cast<double>(up) / static_cast<double>(m), 1e3 * server_cpu, static_cast<double>(up));
}

}  // namespace

int main(int argc, char** argv) {
  const auto n = static_cast<NodeId>(argc > 1 ? std::atoi(argv[1]) : 100);
  const std::size_t d = argc > 2 ? static_cast<std::size_t>(std::atol(argv[2])) : 7852;
  const std::size_t k = argc > 3 ? static_cast<std::size_t>(std::atol(argv[3])) : 0;
  const double dropout = argc > 4 ? std::atof(argv[4]) : 0.1;
  std::printf(
      "| protocol | clients | dropped | values | client CPU ms | client up B | client down B | server CPU ms "
      "| server in B | server out B | result |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|---|---|\n");
  Plain(n, d, dropout);
  Secure(n, d, k, dropout);
  return 0;
}
