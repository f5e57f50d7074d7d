// Recursive halving and doubling (gossip/collective_schedule.h) against
// outside truths: the exact sum, the bytes of Rabenseifner's analysis
// (2 (p - 1) / p of the vector per ranked node, a whole vector each way for
// a folded pair), and the latency count of the steps, 2 log2 p (+ 2 when n
// is not a power of two) against the ring's 2 (n - 1), read off the
// simulator's clock.
#include <doctest/doctest.h>

#include <chrono>
#include <cmath>
#include <cstddef>
#include <vector>

#include "core/rng.h"
#include "gossip/collective_schedule.h"
#include "tests/gossip/allreduce_harness.h"

namespace murmur::gossip {
namespace {

using testing::RingRun;
using testing::RunExactSum;
using testing::RunRing;

// The largest power of two <= n, counted by hand.
NodeId PowerBelow(NodeId n) {
  NodeId p = 1;
  while (p * 2 <= n) p *= 2;
  return p;
}

TEST_CASE("Halving-doubling: every send meets a receive of the same step, range and length") {
  for (NodeId n = 1; n <= 33; ++n) {
    CAPTURE(n);
    const std::size_t len = 41;
    const NodeId p = PowerBelow(n);
    const auto levels = static_cast<std::size_t>(std::lround(std::log2(p)));
    for (NodeId i = 0; i < n; ++i) {
      const CollectiveSchedule s(Collective::kHalvingDoubling, n, i, len);
      CHECK(s.steps() == 2 * levels + (n == p ? 0 : 2));
      for (std::size_t t = 0; t < s.steps(); ++t) {
        const CollectiveStep mine = s.At(t);
        if (mine.send_to == CollectiveStep::kNobody) continue;
        const CollectiveStep theirs =
            CollectiveSchedule(Collective::kHalvingDoubling, n, mine.send_to, len).At(t);
        CHECK(theirs.recv_from == i);
        CHECK(theirs.recv.begin == mine.send.begin);
        CHECK(theirs.recv.end == mine.send.end);
      }
    }
  }
}

TEST_CASE(
    "Halving-doubling all-reduce: the exact sum for 1 to 17 nodes, and Rabenseifner's bytes: "
    "2 (p - 1) / p of the vector per ranked node, one vector more each way in a folded pair") {
  for (NodeId n = 1; n <= 17; ++n) {
    const NodeId p = PowerBelow(n), r = n - p;
    for (std::size_t len : {std::size_t{37}, std::size_t{5} * p, std::size_t{1}}) {
      CAPTURE(n);
      CAPTURE(len);
      const auto [run, sum] = RunExactSum(n, len, Collective::kHalvingDoubling);
      for (NodeId i = 0; i < n; ++i) {
        CAPTURE(i);
        for (std::size_t k = 0; k < len; ++k)
          CHECK(run.models[i][k] == static_cast<float>(sum[k]) / static_cast<float>(n));
        if (len % p != 0) continue;
        const std::size_t ranked = 2 * (p - 1) * len / p;
        const bool paired = i < 2 * r;
        std::size_t want = ranked;
        if (paired) want = i % 2 == 0 ? len : ranked + len;  // the folded one gets the result back
        CHECK(run.received[i] == want);
      }
    }
  }
}

TEST_CASE(
    "Halving-doubling gives every node the same bits, and the sum to float rounding, on random values") {
  for (NodeId n : {3u, 8u, 13u}) {
    CAPTURE(n);
    const std::size_t len = 53;
    std::vector<std::vector<float>> x0s(n, std::vector<float>(len)), targets = x0s;
    std::vector<double> mean(len, 0);
    for (NodeId i = 0; i < n; ++i) {
      Rng rng(11, i, RngPurpose::kGeneric);
      for (std::size_t k = 0; k < len; ++k) {
        x0s[i][k] = static_cast<float>(rng.Normal());
        mean[k] += x0s[i][k] / n;
      }
    }
    RingAllReduceOptions o;
    o.rounds = 1;
    o.collective = Collective::kHalvingDoubling;
    const RingRun run = RunRing(n, o, 0.0, x0s, targets);
    for (NodeId i = 0; i < n; ++i) {
      CHECK(run.models[i] == run.models[0]);
      for (std::size_t k = 0; k < len; ++k) CHECK(run.models[i][k] == doctest::Approx(mean[k]).epsilon(1e-5));
    }
  }
}

TEST_CASE(
    "A tiny vector over 10 ms links: halving-doubling's round takes 2 log2 p (+ 2) latencies, the "
    "ring's 2 (n - 1)") {
  // The simulator's default link: 5 ms at each end, 100 Mbit/s; one step
  // moves a few bytes, so each step costs one 10 ms latency (plus well
  // under 0.5 ms of transfer and the 0.1 ms local step).
  for (NodeId n : {8u, 12u, 16u}) {
    CAPTURE(n);
    const NodeId p = PowerBelow(n);
    const double levels = std::log2(p);
    std::vector<std::vector<float>> x0s(n, std::vector<float>(4, 1.0f)), targets = x0s;
    RingAllReduceOptions o;
    o.rounds = 1;
    const RingRun ring = RunRing(n, o, 0.0, x0s, targets);
    o.collective = Collective::kHalvingDoubling;
    const RingRun rhd = RunRing(n, o, 0.0, x0s, targets);
    const double ring_steps = 2.0 * (n - 1), rhd_steps = 2 * levels + (n == p ? 0 : 2);
    CHECK(ring.seconds >= ring_steps * 0.010);
    CHECK(ring.seconds <= ring_steps * 0.0105 + 0.001);
    CHECK(rhd.seconds >= rhd_steps * 0.010);
    CHECK(rhd.seconds <= rhd_steps * 0.0105 + 0.001);
  }
}

TEST_CASE("Halving-doubling with a silent member: the others time out, keep their models and finish") {
  for (NodeId silent : {0u, 5u}) {  // 0 folds into 1; 5 is ranked
    CAPTURE(silent);
    const NodeId n = 6;
    std::vector<std::vector<float>> x0s(n, std::vector<float>(8)), targets = x0s;
    for (NodeId i = 0; i < n; ++i) x0s[i][0] = static_cast<float>(i);
    RingAllReduceOptions o;
    o.rounds = 3;
    o.round_timeout = std::chrono::seconds(5);
    o.collective = Collective::kHalvingDoubling;
    const RingRun run = RunRing(n, o, 0.0, x0s, targets, {silent});
    for (NodeId i = 0; i < n; ++i) {
      if (i == silent) continue;
      CAPTURE(i);
      CHECK(run.failed[i] == 3);  // every node needs the silent one's part of the sum
      CHECK(run.models[i][0] == static_cast<float>(i));
    }
  }
}

}  // namespace
}  // namespace murmur::gossip
