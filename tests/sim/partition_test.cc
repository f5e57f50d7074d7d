// A simulation spread over ranks ends with the same metrics, bit for bit, as
// the same scenario in one process. The ranks here are threads of this process
// (sim/ranks/thread_ranks.h), talking through the same collectives MPI provides;
// tests/apps/sim_mpi_test.sh runs the same check through mpirun.
#include <doctest/doctest.h>

#include <thread>

#include "sim/metis/metis.h"
#include "sim/net/event_queue.h"
#include "sim/ranks/placement.h"
#include "sim/ranks/thread_ranks.h"
#include "sim/run/federated_run.h"
#include "sim/runner.h"
#include "tests/sim/same_metrics.h"

namespace murmur::sim {
namespace {

// run(options, r) on `ranks` threads at once, rank r's options naming its
// rank; every rank's result.
template <typename Run>
std::vector<Result<RunSummary>> OnRanks(int ranks, Run run) {
  auto group = MakeThreadRanks(ranks);
  std::vector<Result<RunSummary>> results(ranks, Status::Internal("not run"));
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r) {
    threads.emplace_back([&, r] {
      RunOptions o;
      o.ranks = group[r].get();
      results[r] = run(o, r);
    });
  }
  for (auto& t : threads) t.join();
  return results;
}

// RunScenario on `ranks` threads at once; every rank's result.
std::vector<Result<RunSummary>> RunOnRanks(const proto::Scenario& s, int ranks) {
  return OnRanks(ranks, [&](const RunOptions& o, int) { return RunScenario(s, {}, o); });
}

proto::Scenario Small(const std::string& algorithm) {
  proto::Scenario s;
  proto::JobSpec& spec = *s.mutable_spec();
  spec.set_dataset("synthetic:blobs");
  spec.set_model("mlp:16");
  spec.set_nodes(11);
  spec.set_rounds(24);
  spec.set_eval_every(8);
  spec.set_lr(0.1);
  spec.set_algorithm(algorithm);
  spec.set_topology("ring");
  spec.set_period(0.05);
  s.set_eval_samples(400);
  s.set_eval_nodes(5);
  s.set_threads(1);
  // Heterogeneous devices, lossy links with jitter: messages race, and every
  // random draw must come from its node's own stream.
  s.set_devices("phone:0.5,iot:0.5");
  s.set_loss(0.05);
  s.set_jitter(0.3);
  return s;
}

TEST_CASE("A node block per rank: even blocks in id order, and the rank of every node") {
  Placement p(10, 4, 2);
  CHECK(p.blocks());
  CHECK(p.local_nodes() == std::vector<NodeId>{5, 6});
  CHECK(p.local(5));
  CHECK_FALSE(p.local(7));
  const int expect[10] = {0, 0, 1, 1, 1, 2, 2, 3, 3, 3};
  for (NodeId i = 0; i < 10; ++i) {
    CAPTURE(i);
    CHECK(p.RankOf(i) == expect[i]);
  }
  Placement one(5);
  CHECK(one.ranks() == 1);
  CHECK(one.count() == 5);
  Placement sparse(2, 3, 0);  // more ranks than nodes: rank 0's block is empty
  CHECK(sparse.count() == 0);
  CHECK(sparse.RankOf(0) == 1);
  CHECK(sparse.RankOf(1) == 2);
}

TEST_CASE("A placement by assignment: each rank's nodes in id order, and the rank of every node") {
  Placement p({2, 0, 2, 1, 0, 2}, 3, 2);
  CHECK_FALSE(p.blocks());
  CHECK(p.local_nodes() == std::vector<NodeId>{0, 2, 5});
  CHECK(p.count() == 3);
  CHECK(p.local(2));
  CHECK_FALSE(p.local(3));
  CHECK(p.RankOf(3) == 1);
  CHECK(p.RankOf(4) == 0);
}

// Edges of `g` whose ends are in different parts.
std::size_t CutEdges(const topology::Graph& g, const std::vector<int>& part) {
  std::size_t cut = 0;
  for (const topology::Edge& e : g.Edges()) cut += part[e.u] != part[e.v];
  return cut;
}

// A 2-D torus of side x side nodes whose ids are shuffled, so that id blocks
// say nothing about who is near whom.
topology::Graph ShuffledTorus(NodeId side) {
  const NodeId n = side * side;
  std::vector<NodeId> id(n);
  for (NodeId i = 0; i < n; ++i) id[i] = i;
  Rng rng(7, 0, RngPurpose::kGeneric);
  rng.Shuffle(std::span<NodeId>(id));
  std::vector<topology::Edge> edges;
  for (NodeId r = 0; r < side; ++r) {
    for (NodeId c = 0; c < side; ++c) {
      edges.push_back({id[r * side + c], id[r * side + (c + 1) % side]});
      edges.push_back({id[r * side + c], id[((r + 1) % side) * side + c]});
    }
  }
  return topology::Graph::FromEdgesDedup(n, edges);
}

TEST_CASE("The graph partition finds the structure that shuffled ids hide") {
  const topology::Graph torus = ShuffledTorus(16);  // 256 nodes, 512 edges
  if (!metis::Available()) {                        // a build without METIS says how to get it
    auto part = metis::Partition(torus, 4, 1);
    REQUIRE_FALSE(part.ok());
    CHECK(part.status().message().find("libmetis-dev") != std::string::npos);
    return;
  }
  // Four parts of a 16 x 16 torus cut at least 64 edges (four 8 x 8 squares,
  // or four strips, cut 64); blocks of shuffled ids cut about 3/4 of them.
  auto part = metis::Partition(torus, 4, 1);
  REQUIRE(part.ok());
  std::vector<int> size(4, 0);
  for (int p : *part) ++size.at(static_cast<std::size_t>(p));
  for (int s : size) CHECK(s <= 66);  // within 3% of 64
  CHECK(CutEdges(torus, *part) >= 64);
  CHECK(CutEdges(torus, *part) <= 80);
  std::vector<int> blocks(256);
  for (NodeId i = 0; i < 256; ++i) blocks[i] = static_cast<int>(i / 64);
  CHECK(CutEdges(torus, blocks) > 300);
  // The same answer every time; two cliques joined by one edge are cut there.
  CHECK(metis::Partition(torus, 4, 1).value() == *part);
  std::vector<topology::Edge> edges{{3, 12}};
  for (NodeId a = 0; a < 20; ++a)
    for (NodeId b = a + 1; b < 20; ++b)
      if ((a % 2) == (b % 2)) edges.push_back({a, b});
  const topology::Graph cliques = topology::Graph::FromEdgesDedup(20, edges);
  auto two = metis::Partition(cliques, 2, 1);
  REQUIRE(two.ok());
  CHECK(CutEdges(cliques, *two) == 1);
}

TEST_CASE("Events run by time, then origin node, then that node's order, whatever the scheduling order") {
  EventQueue q;
  std::vector<int> ran;
  q.Schedule(Nanos(5), 3, [&] { ran.push_back(1); });
  q.Schedule(Nanos(5), kWorldOrigin, [&] { ran.push_back(2); });
  q.Schedule(Nanos(5), 1, [&] { ran.push_back(3); });
  q.Schedule(Nanos(4), 9, [&] { ran.push_back(4); });
  q.Schedule(Nanos(5), 3, [&] { ran.push_back(5); });
  const std::uint64_t later = q.NextSequence(1);  // taken now, queued later (as an offload's completion)
  q.Schedule(Nanos(5), 1, [&] { ran.push_back(6); });
  q.Schedule(EventKey{Nanos(5), 1, later}, [&] { ran.push_back(7); });
  // A node's own timeline (its churn) after its other events of the instant.
  q.Schedule(EventKey{Nanos(5), 1, q.NextTimelineSequence(1)}, [&] { ran.push_back(8); });
  q.Schedule(Nanos(5), 1, [&] { ran.push_back(9); });
  while (!q.empty()) q.Pop().second();
  CHECK(ran == std::vector<int>{4, 3, 7, 6, 9, 8, 1, 5, 2});
}

TEST_CASE("Every gossip algorithm spread over 2, 3 and 4 ranks gives one process's metrics bit for bit") {
  for (std::string algorithm :
       {"dpsgd", "dpsgd-cta", "choco", "diloco", "allreduce", "push-sum", "dsgt", "gossip-learning"}) {
    CAPTURE(algorithm);
    proto::Scenario s = Small(algorithm);
    if (algorithm == "choco") {
      s.mutable_spec()->set_algorithm("dpsgd");
      s.mutable_spec()->set_compression("topk:0.1");
    } else {
      s.mutable_spec()->set_compression("fp16");
    }
    if (algorithm == "push-sum") s.mutable_spec()->set_topology("exponential");
    s.set_churn_online(0.5);  // nodes go and come back (phones and IoT are not always on)
    auto one = RunScenario(s).value();
    CHECK(one.points.back().avg_acc > 0.3);
    for (int ranks : {2, 3, 4}) {
      CAPTURE(ranks);
      // Id blocks on 2 ranks, the graph partition (where the build has METIS) on 3 and 4.
      s.set_placement(ranks == 2 || !metis::Available() ? "blocks" : "graph");
      auto results = RunOnRanks(s, ranks);
      for (int r = 0; r < ranks; ++r) {
        CAPTURE(r);
        REQUIRE(results[r].ok());
        CheckSameMetrics(one, *results[r]);
        CHECK(results[r]->messages_sent == one.messages_sent);
        CHECK(results[r]->virtual_s == one.virtual_s);
        CHECK(results[r]->stop_reason == one.stop_reason);
      }
    }
  }
}

TEST_CASE(
    "On a random geometric graph the partition crosses fewer messages than id blocks, and changes no bit") {
  proto::Scenario s = Small("dpsgd");
  s.mutable_spec()->set_nodes(60);
  s.mutable_spec()->set_topology("geometric");  // ids in no spatial order
  s.mutable_spec()->set_rounds(6);
  s.mutable_spec()->set_eval_every(3);
  const RunSummary one = RunScenario(s).value();
  s.set_placement("blocks");
  const auto blocks = RunOnRanks(s, 3);
  s.set_placement("graph");
  const auto graph = RunOnRanks(s, 3);
  if (!metis::Available()) {
    REQUIRE_FALSE(graph[0].ok());
    CHECK(graph[0].status().message().find("libmetis-dev") != std::string::npos);
    return;
  }
  for (int r = 0; r < 3; ++r) {
    CAPTURE(r);
    REQUIRE(blocks[r].ok());
    REQUIRE(graph[r].ok());
    CheckSameMetrics(one, *blocks[r]);
    CheckSameMetrics(one, *graph[r]);
  }
  MESSAGE("cross-rank messages: blocks " << blocks[0]->cross_rank_messages << ", graph "
                                         << graph[0]->cross_rank_messages << " of " << one.messages_sent);
  CHECK(graph[0]->cross_rank_messages * 2 < blocks[0]->cross_rank_messages);
}

TEST_CASE("A partitioned run stops on a time budget where one process does") {
  proto::Scenario s = Small("dpsgd");
  s.mutable_spec()->set_compression("none");
  s.mutable_spec()->set_rounds(1000);
  s.set_time_budget(3.0);
  auto one = RunScenario(s).value();
  REQUIRE(one.stop_reason == "time budget");
  auto results = RunOnRanks(s, 3);
  for (auto& r : results) {
    REQUIRE(r.ok());
    CheckSameMetrics(one, *r);
  }
}

TEST_CASE(
    "What a partitioned run cannot do is refused by the lowest rank, the others say another rank failed") {
  proto::Scenario s = Small("dpsgd");
  s.mutable_spec()->set_compression("none");
  s.mutable_spec()->set_attack("sign-flip");
  s.mutable_spec()->set_attack_fraction(0.2);
  auto results = RunOnRanks(s, 3);
  REQUIRE_FALSE(results[0].ok());
  CAPTURE(results[0].status().message());
  CHECK(results[0].status().message().find("Byzantine") != std::string::npos);
  CHECK(FailedOnAnotherRank(results[1].status()));
  CHECK(FailedOnAnotherRank(results[2].status()));
  // More ranks than nodes, or than a federated run's clients.
  s = Small("dpsgd");
  s.mutable_spec()->set_nodes(2);
  results = RunOnRanks(s, 3);
  REQUIRE_FALSE(results[0].ok());
  CHECK(results[0].status().message().find("3 ranks for 2 nodes") != std::string::npos);
  s = Small("fedavg");
  s.mutable_spec()->set_compression("none");
  s.mutable_spec()->set_nodes(2);
  s.mutable_spec()->set_clients_per_round(2);
  results = RunOnRanks(s, 3);
  REQUIRE_FALSE(results[0].ok());
  CHECK(results[0].status().message().find("3 ranks for 2 clients") != std::string::npos);
  CHECK(FailedOnAnotherRank(results[1].status()));
}

TEST_CASE("Federated runs spread over 2, 3 and 4 ranks give one process's metrics and model bit for bit") {
  struct Case {
    std::string name, algorithm;
    std::uint32_t edges;
    bool secure;
  };
  for (const Case& c : {Case{"fedavg", "fedavg", 0, false}, Case{"fedbuff", "fedbuff", 0, false},
                        Case{"scaffold", "scaffold", 0, false}, Case{"hierarchical", "fedavg", 3, false},
                        Case{"secagg", "fedavg", 0, true}}) {
    CAPTURE(c.name);
    proto::Scenario s = Small(c.algorithm);
    s.mutable_spec()->set_nodes(13);
    s.mutable_spec()->set_clients_per_round(5);
    s.mutable_spec()->set_compression("none");
    s.mutable_spec()->set_upload_compression(c.secure ? "none" : "topk:0.3");
    s.mutable_spec()->set_edge_aggregators(c.edges);
    s.mutable_spec()->set_secure_aggregation(c.secure);
    if (!c.secure) s.set_churn_online(2.0);
    if (c.edges > 0) s.set_loss(0);  // an edge's lost upload stalls its round: the top waits on every edge
    FederatedStats one_stats;
    auto one = RunFederatedScenario(s, {}, &one_stats).value();
    CHECK(one.points.back().avg_acc > 0.3);
    // Whoever the (top) server accepted results from, SecAgg's survivors
    // included: clients, or edges when there are edge aggregators.
    CHECK(one.contributors > 0);
    CHECK(one.contributors <= (c.edges > 0 ? c.edges : 13u));
    CHECK(one.contributors <= one_stats.results_accepted);
    for (int ranks : {2, 3, 4}) {
      CAPTURE(ranks);
      std::vector<FederatedStats> stats(ranks);
      auto results = OnRanks(
          ranks, [&](const RunOptions& o, int r) { return RunFederatedScenario(s, {}, &stats[r], o); });
      for (int r = 0; r < ranks; ++r) {
        CAPTURE(r);
        REQUIRE(results[r].ok());
        CheckSameMetrics(one, *results[r]);
        CHECK(results[r]->stop_reason == one.stop_reason);
        CHECK(results[r]->contributors == one.contributors);
        CHECK(stats[r].final_model == one_stats.final_model);
        CHECK(stats[r].results_accepted == one_stats.results_accepted);
      }
    }
  }
}

}  // namespace
}  // namespace murmur::sim
