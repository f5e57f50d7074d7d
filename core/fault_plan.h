// FaultPlan: which faults FaultyEnv (core/faulty_env.h) injects on which
// link, and when.
//
// A plan holds rules and partitions. A rule gives the LinkFaults of the
// messages sent on the links it matches (a sender, a receiver, or any) while
// the sender's clock is in [start, end); when several rules match, the one
// added last applies, so a plan reads as a default followed by exceptions.
// A partition splits nodes into groups: during its window no message goes
// from a node of one group to a node of another (nodes in no group are not
// affected). A test may also switch a partition on and off by hand.
//
// Partition syntax (FaultConfig `partition`, proto/faults.proto: the
// scenario's faults.partition or --fault-partition): windows separated
// by ';', each `GROUP|GROUP[|GROUP...][@T0-T1]`. A group is a comma-separated
// list of node ids and inclusive ranges A-B. T0 and T1 are times with an
// optional unit (s, the default, or ms); T1 may be left out (until the end),
// and so may the whole `@...` (the whole run). Example: `0-3|4-7@10s-70s`
// cuts nodes 0..3 from 4..7 from 10 s to 70 s of virtual (or env) time.
//
// Thread-safety: add rules and partitions before the envs that read the plan
// start sending. SetManualPartition/ClearManualPartition may be called from
// any thread at any time (a mutex guards the manual partition); the other
// reads are then safe from any number of threads.
#pragma once

#include <memory>
#include <mutex>
#include <string_view>
#include <vector>

#include "core/env.h"
#include "core/status.h"

namespace murmur {

// The faults of one message on one link. Probabilities are per message and
// independent; defaults inject nothing.
struct LinkFaults {
  double drop = 0;        // the message is lost
  double duplicate = 0;   // the message is delivered twice
  double reorder = 0;     // the message is held and released after the next one on the link
  double corrupt = 0;     // the message's bytes are damaged (CorruptedMessage)
  Nanos delay{0};         // fixed extra delay of every message
  Nanos delay_jitter{0};  // plus U[0, delay_jitter); independent draws reorder messages too
  // A held message that no later message overtakes is released this long after it was held.
  Nanos reorder_hold = std::chrono::milliseconds(100);
  // Corruption: this many bytes at random positions are XOR'ed with a nonzero
  // value, then between 1 and corrupt_max_cut trailing bytes are cut (0: none).
  int corrupt_flips = 4;
  std::size_t corrupt_max_cut = 8;

  bool any() const {
    return drop > 0 || duplicate > 0 || reorder > 0 || corrupt > 0 || delay.count() > 0 ||
           delay_jitter.count() > 0;
  }
  // Probabilities in [0, 1] (drop below 1), times >= 0, flips >= 0.
  Status Validate() const;
};

inline constexpr NodeId kAnyNode = kNoNode;

struct FaultRule {
  NodeId from = kAnyNode;  // sender, or any
  NodeId to = kAnyNode;    // receiver, or any
  Nanos start{0};          // active while the sender's Now() is in [start, end)
  Nanos end = Nanos::max();
  LinkFaults faults;
};

struct PartitionWindow {
  std::vector<std::vector<NodeId>> groups;  // at least two, disjoint
  Nanos start{0};
  Nanos end = Nanos::max();
};

// Parses the partition syntax above. Errors name the window and the problem;
// node ids must be below `num_nodes`.
Result<std::vector<PartitionWindow>> ParsePartitions(std::string_view spec, NodeId num_nodes);

class FaultPlan {
 public:
  void AddRule(const FaultRule& rule);
  // Rejects groups that overlap or fewer than two groups.
  Status AddPartition(const PartitionWindow& window);
  // A partition active from now until ClearManualPartition (replaces an earlier one).
  Status SetManualPartition(std::vector<std::vector<NodeId>> groups);
  void ClearManualPartition();
  // Removes every rule, window and the manual partition. Like AddRule, only
  // where nothing reads the plan concurrently (a daemon calls it on the
  // thread its envs send from).
  void Clear();

  // The faults of a message from `from` to `to` sent at `now` (none when no rule matches).
  LinkFaults FaultsFor(NodeId from, NodeId to, Nanos now) const;
  // Whether a partition separates `from` and `to` at `now`.
  bool Partitioned(NodeId from, NodeId to, Nanos now) const;

 private:
  // A partition with each node's group index (-1: in no group), for O(1) lookups.
  struct Cut {
    std::vector<int> group_of;
    Nanos start{0};
    Nanos end = Nanos::max();
    bool Separates(NodeId a, NodeId b) const;
  };
  static Result<Cut> MakeCut(const std::vector<std::vector<NodeId>>& groups, Nanos start, Nanos end);

  std::vector<FaultRule> rules_;
  std::vector<Cut> cuts_;
  mutable std::mutex mu_;
  std::unique_ptr<Cut> manual_;  // guarded by mu_
};

}  // namespace murmur
