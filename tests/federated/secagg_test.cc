// SecAgg+ end to end over the wire encoding (tests/federated/secagg_harness.h):
// with 0%, 10% and 30% of the clients silent after key sharing the server's
// sum equals the plaintext sum of the survivors' inputs within the
// quantization bound m R / (2^bits - 1), computed here from the parameters;
// past the threshold the round aborts and the server holds only masked
// inputs; and the neighbour graph is k-regular and symmetric.
#include <doctest/doctest.h>

#include <cmath>
#include <map>
#include <set>

#include "core/rng.h"
#include "federated/secagg_graph.h"
#include "federated/secagg_quantizer.h"
#include "tests/federated/secagg_harness.h"

namespace murmur::federated {
namespace {

using testing::SecAggNet;

std::vector<std::vector<double>> RandomInputs(NodeId n, std::size_t d, double range, std::uint64_t seed) {
  Rng rng(seed, 0, RngPurpose::kGeneric);
  std::vector<std::vector<double>> x(n, std::vector<double>(d));
  for (auto& v : x) {
    for (auto& e : v) e = rng.Uniform(-range, range);
  }
  return x;
}

std::set<NodeId> Silent(NodeId n, double fraction, std::uint64_t seed) {
  std::vector<NodeId> ids(n);
  for (NodeId i = 0; i < n; ++i) ids[i] = i;
  Rng rng(seed, 1, RngPurpose::kGeneric);
  rng.Shuffle(std::span<NodeId>(ids));
  const auto k = static_cast<std::size_t>(std::llround(fraction * n));
  return std::set<NodeId>(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(k));
}

// The outcome sums exactly the inputs of `want` (16 bits, range 2) within the
// bound from the parameters alone, m R / (2^16 - 1), with `dropped` dropouts.
// Returns the largest error.
double CheckSumOf(const SecAggOutcome& outcome, const std::vector<std::vector<double>>& x,
                  const std::vector<NodeId>& want, std::size_t dropped) {
  CHECK(outcome.survivors == want);
  CHECK(outcome.dropped == dropped);
  const double bound = static_cast<double>(want.size()) * 2.0 / 65535.0;
  CHECK(outcome.error_bound == doctest::Approx(bound));
  double worst = 0;
  for (std::size_t j = 0; j < outcome.sum.size(); ++j) {
    double plain = 0;
    for (NodeId i : want) plain += x[i][j];
    worst = std::max(worst, std::abs(outcome.sum[j] - plain));
  }
  CHECK(worst <= bound * (1 + 1e-9));
  return worst;
}

void CheckSum(NodeId n, std::size_t k, double dropout, std::uint64_t seed) {
  CAPTURE(n);
  CAPTURE(k);
  CAPTURE(dropout);
  CAPTURE(seed);
  SecAggParams p;
  p.neighbours = k;
  p.quantizer.bits = 16;
  p.quantizer.range = 2.0;
  const std::size_t d = 300;
  const auto silent = Silent(n, dropout, seed);
  const auto x = RandomInputs(n, d, p.quantizer.range, seed);
  SecAggNet net(n, p, d, silent, seed);
  net.Run(x);
  REQUIRE(net.outcome.has_value());
  REQUIRE_MESSAGE(net.outcome->status.ok(), net.outcome->status.ToString());
  std::vector<NodeId> want;
  for (NodeId i = 0; i < n; ++i) {
    if (!silent.count(i)) want.push_back(i);
  }
  const double worst = CheckSumOf(*net.outcome, x, want, silent.size());
  CHECK(worst > 0);  // quantized, not exact: the test would notice a plaintext shortcut
}

TEST_CASE("SecAgg (complete graph): the sum is exact within m R / 2^bits with 0%, 10%, 30% dropouts") {
  for (double dropout : {0.0, 0.1, 0.3}) {
    for (std::uint64_t seed : {1u, 2u}) CheckSum(20, 0, dropout, seed);
  }
}

TEST_CASE("SecAgg+ (k = 20 of 40): the sum is exact within m R / 2^bits with 0%, 10%, 30% dropouts") {
  for (double dropout : {0.0, 0.1, 0.3}) {
    for (std::uint64_t seed : {1u, 2u}) CheckSum(40, 20, dropout, seed);
  }
}

// Client `liar`'s sealed shares reach its neighbours, in the order the server
// forwards them (ascending ids), and those to the ones numbered [from, to) of
// that order arrive as random bytes (what an insider that seals garbage
// sends; the server cannot tell). The round must end with `liar` excluded,
// each complaint reported, nobody aborting, and the sum of the others (less
// the silent ones) within the quantization bound.
void CheckExcluded(NodeId n, std::size_t k, NodeId liar, std::size_t from, std::size_t to,
                   const std::set<NodeId>& silent) {
  CAPTURE(n);
  CAPTURE(k);
  CAPTURE(from);
  CAPTURE(to);
  CAPTURE(silent.size());
  SecAggParams p;
  p.neighbours = k;
  p.quantizer.bits = 16;
  p.quantizer.range = 2.0;
  const std::size_t d = 100;
  const auto x = RandomInputs(n, d, p.quantizer.range, 4);
  SecAggNet net(n, p, d, silent, 4);
  Rng noise(5, 0, RngPurpose::kGeneric);
  std::size_t reached = 0;
  std::vector<std::pair<NodeId, NodeId>> complaints;
  net.tamper = [&](NodeId recipient, std::shared_ptr<const SecAggMessage> m) {
    if (m->stage() != SecAggStage::kShareList) return m;
    SecAggBody b = m->body();
    for (auto& sealed : b.sealed) {
      if (sealed.peer != liar) continue;
      const std::size_t order = reached++;
      if (order < from || order >= to) continue;
      for (auto& byte : sealed.bytes) byte = static_cast<std::uint8_t>(noise.NextU32());
      if (!silent.count(recipient)) complaints.emplace_back(recipient, liar);
    }
    return std::make_shared<const SecAggMessage>(m->stage(), m->round(), std::move(b));
  };
  net.Run(x);
  REQUIRE(net.outcome.has_value());
  REQUIRE_MESSAGE(net.outcome->status.ok(), net.outcome->status.ToString());
  CHECK(reached == (k == 0 ? n - 1 : k));
  CHECK(net.outcome->excluded == std::vector<NodeId>{liar});
  CHECK(net.outcome->complaints == complaints);
  CHECK(net.outcome->clients_aborted == 0);
  std::vector<NodeId> want;
  for (NodeId i = 0; i < n; ++i) {
    if (i != liar && !silent.count(i)) want.push_back(i);
  }
  CheckSumOf(*net.outcome, x, want, silent.size());
}

TEST_CASE(
    "A client whose sealed shares do not open is complained of and excluded and the others are summed") {
  // Garbage to all 7 others: nobody masks for client 5, so only its input
  // stays out.
  CheckExcluded(8, 0, 5, 0, 7, {});
  // With client 2 silent after key sharing as well: its masks come out by
  // its reconstructed key.
  CheckExcluded(8, 0, 5, 0, 7, {2});
  // Valid shares to the first neighbour only: it masked for client 5 and
  // reveals that pairwise seed (no threshold of client 5's shares exists).
  CheckExcluded(8, 0, 5, 1, 7, {});
  // One complaint excludes (the server cannot tell which of the two lied);
  // the other neighbours reveal their seeds. On a SecAgg+ graph of 6
  // neighbours out of 12 (threshold 4), with a dropout: an excluded client
  // counts as dropped in its neighbours' threshold checks.
  CheckExcluded(8, 0, 5, 3, 4, {});
  CheckExcluded(12, 6, 7, 2, 3, {1});
}

TEST_CASE("Past the threshold the round aborts, no client reveals a share, and the inputs stay masked") {
  SecAggParams p;
  p.threshold = 0.6;  // n = 10, k = 9: t = 6
  const NodeId n = 10;
  const std::size_t d = 200;
  std::set<NodeId> silent = {1, 3, 5, 7, 9};  // 5 survivors, each with 4 surviving neighbours < 6
  const auto x = RandomInputs(n, d, p.quantizer.range, 3);
  SecAggNet net(n, p, d, silent, 3);
  net.Run(x);
  REQUIRE(net.outcome.has_value());
  CHECK(net.outcome->status.code() == StatusCode::kAborted);
  CHECK(net.outcome->status.message().find("threshold 6") != std::string::npos);
  CHECK(net.outcome->sum.empty());
  SecAggQuantizer q(p.quantizer);
  std::vector<std::uint32_t> plain_sum(d, 0), masked_sum(d, 0);
  for (NodeId i = 0; i < n; ++i) {
    if (silent.count(i)) continue;
    CHECK(net.clients[i]->aborted());
    CHECK(net.clients[i]->shares_revealed() == 0);
    // What the server holds of client i is its masked input; it agrees with the
    // quantized input in about d / 2^32 coordinates, i.e. none.
    const auto& y = net.server->masked_inputs().at(i);
    std::vector<std::uint32_t> qi(d);
    q.Quantize(x[i], qi);
    std::size_t same = 0;
    for (std::size_t j = 0; j < d; ++j) {
      same += y[j] == qi[j];
      plain_sum[j] += qi[j];
      masked_sum[j] += y[j];
    }
    CHECK(same == 0);
  }
  // Nor does the sum of what it holds unmask: the self masks and the masks
  // shared with the dropped clients remain.
  std::size_t same = 0;
  for (std::size_t j = 0; j < d; ++j) same += plain_sum[j] == masked_sum[j];
  CHECK(same == 0);
}

TEST_CASE("Too few clients advertise keys: the round aborts before anything is shared") {
  SecAggParams p;
  p.min_participants = 5;
  SecAggNet net(4, p, 10);
  net.Run(RandomInputs(4, 10, 1.0, 1));
  REQUIRE(net.outcome.has_value());
  CHECK(net.outcome->status.code() == StatusCode::kAborted);
  CHECK(net.outcome->status.message().find("4 clients advertised keys, fewer than 5") != std::string::npos);
}

TEST_CASE("The SecAgg+ graph is k-regular and symmetric, and complete when k >= n - 1") {
  crypto::MaskSeed seed{};
  seed[5] = 77;
  for (std::size_t n : {3u, 7u, 20u, 101u}) {
    for (std::size_t k : {0u, 2u, 4u, 10u, 200u}) {
      CAPTURE(n);
      CAPTURE(k);
      std::vector<NodeId> ids;
      for (std::size_t i = 0; i < n; ++i) ids.push_back(static_cast<NodeId>(3 * i + 1));
      const std::size_t kk = NeighbourCount(n, k);
      CHECK(kk == ((k == 0 || k >= n - 1) ? n - 1 : k));
      std::map<NodeId, std::vector<NodeId>> nb;
      for (NodeId u : ids) {
        nb[u] = SecAggNeighbours(seed, ids, u, k);
        REQUIRE(nb[u].size() == kk);
        CHECK(std::set<NodeId>(nb[u].begin(), nb[u].end()).size() == kk);
        CHECK(std::find(nb[u].begin(), nb[u].end(), u) == nb[u].end());
      }
      for (NodeId u : ids) {
        for (NodeId v : nb[u]) CHECK(std::binary_search(nb[v].begin(), nb[v].end(), u));
      }
    }
  }
  // Another seed, another graph.
  std::vector<NodeId> ids(50);
  for (NodeId i = 0; i < 50; ++i) ids[i] = i;
  crypto::MaskSeed other = seed;
  other[0] = 1;
  CHECK(SecAggNeighbours(seed, ids, 0, 6) != SecAggNeighbours(other, ids, 0, 6));
}

TEST_CASE("The threshold is a strict majority of the neighbourhood at least") {
  CHECK(SecAggThreshold(16, 0.5) == 9);
  CHECK(SecAggThreshold(16, 0.0) == 9);
  CHECK(SecAggThreshold(9, 0.6) == 6);
  CHECK(SecAggThreshold(10, 0.7) == 7);
  CHECK(SecAggThreshold(10, 1.0) == 10);
  CHECK(SecAggThreshold(1, 0.5) == 1);
}

TEST_CASE(
    "Quantization: the sum of m clients is within m R / (2^bits - 1), and the ring's headroom is checked") {
  QuantizerOptions o;
  o.bits = 12;
  o.range = 0.5;
  SecAggQuantizer q(o);
  Rng rng(9);
  const std::size_t m = 37, d = 1000;
  std::vector<std::uint32_t> sum(d, 0), qi(d);
  std::vector<double> plain(d, 0), x(d);
  for (std::size_t i = 0; i < m; ++i) {
    for (std::size_t j = 0; j < d; ++j) {
      x[j] = rng.Uniform(-0.5, 0.5);
      plain[j] += x[j];
    }
    q.Quantize(x, qi);
    for (std::size_t j = 0; j < d; ++j) sum[j] += qi[j];
  }
  std::vector<double> back(d);
  q.Dequantize(sum, m, back);
  const double bound = 37 * 0.5 / 4095.0;
  CHECK(q.ErrorBound(m) == doctest::Approx(bound));
  double worst = 0;
  for (std::size_t j = 0; j < d; ++j) worst = std::max(worst, std::abs(back[j] - plain[j]));
  CHECK(worst <= bound);
  CHECK(worst > bound / 4);  // rounding errors add up: the bound is not loose by orders of magnitude
  // Clipping: values beyond R count as R.
  std::vector<double> big = {10.0, -10.0};
  std::vector<std::uint32_t> qb(2);
  q.Quantize(big, qb);
  CHECK(qb[0] == 4095u);
  CHECK(qb[1] == 0u);
  // Headroom: 2^20 levels for 4096 clients fit in 32 bits, for 4097 they do not.
  QuantizerOptions b20;
  b20.bits = 20;
  CHECK(SecAggQuantizer::Check(b20, 4096).ok());
  auto over = SecAggQuantizer::Check(b20, 4097);
  CHECK(over.code() == StatusCode::kInvalidArgument);
  CHECK(over.message().find("4097 clients") != std::string::npos);
  b20.bits = 32;
  CHECK_FALSE(SecAggQuantizer::Check(b20, 1).ok());
}

}  // namespace
}  // namespace murmur::federated
