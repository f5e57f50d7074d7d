// Churn: nodes going offline and coming back.
//
// MarkovChurn alternates each node between online and offline periods drawn
// from exponential distributions (a two-state continuous-time Markov chain).
// The mean online period is `mean_online`; the mean offline period is set from
// the node's device availability a so that the long-run fraction of time
// online is a: mean_offline = mean_online (1 - a) / a. A trace instead lists
// (node, time, online) transitions. Both drive Simulator::SetOnline and tell
// the caller through `on_change`, so the algorithm can react (e.g. a
// federated server stops selecting the node). Each transition is an event of
// its node's own timeline (Simulator::AtNodeTimeline), drawn from the node's
// own stream: a rank that follows another rank's node orders it alike.
//
// Thread-safety: used from the simulator's event loop only.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "core/status.h"
#include "sim/net/simulator.h"

namespace murmur::sim {

using ChurnCallback = std::function<void(NodeId node, bool online)>;

struct ChurnOptions {
  Nanos mean_online{std::chrono::seconds(600)};
  // Nodes start online with probability equal to their availability.
  bool random_initial_state = true;
};

// Schedules churn for every node with availability < 1 until `horizon`: the
// simulator's own nodes, or with `every_node` all of them (another rank's
// nodes only to tell `on_change`, as a federated server must hear of its
// clients wherever they run).
void StartMarkovChurn(Simulator& sim, const ChurnOptions& options, Nanos horizon, ChurnCallback on_change,
                      bool every_node = false);

struct ChurnEvent {
  Nanos time;
  NodeId node;
  bool online;
};

// Reads "node,time_s,online" rows (online is 0 or 1; header optional).
Result<std::vector<ChurnEvent>> ReadChurnTrace(const std::string& path, std::size_t num_nodes);
// Schedules the trace's transitions (`every_node`: as for StartMarkovChurn).
void StartTraceChurn(Simulator& sim, std::vector<ChurnEvent> events, ChurnCallback on_change,
                     bool every_node = false);

}  // namespace murmur::sim
