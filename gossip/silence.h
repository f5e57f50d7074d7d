// SilentNeighbours: the silent-neighbour rule of the synchronous gossip
// algorithms with catch-up (D-PSGD, DiLoCo, CHOCO, DSGT; docs/security.md,
// "Insiders"). An in-neighbour whose message was missing at kRounds round
// timeouts in a row while it was waited for is silent: the node's rounds no
// longer wait for it, until a message of it is mixed again or, while no other
// in-neighbour is waited for, until one comes for the round it went silent at
// or later (it lags rather than withholds; the caller checks the "no other").
//
// Thread-safety: event loop only.
#pragma once

#include <cstdint>
#include <map>

#include "core/env.h"

namespace murmur::gossip {

class SilentNeighbours {
 public:
  static constexpr int kRounds = 3;

  bool Silent(NodeId j) const {
    auto it = by_.find(j);
    return it != by_.end() && it->second.timeouts >= kRounds;
  }
  // j's message was missing at the timeout of `round` though j was waited
  // for. True when this makes j silent.
  bool Missed(NodeId j, std::uint64_t round) {
    Silence& s = by_[j];
    s.round = round;
    return ++s.timeouts == kRounds;
  }
  // A message of j was mixed: it answered.
  void Answered(NodeId j) { by_.erase(j); }
  // A message of j for `round` came. When j is silent, has reached the round
  // it went silent at (it lags), and `waited(e)` holds for no other
  // in-neighbour e in `row` (the node would run on alone, ever further ahead
  // of it), j is waited for again: true.
  template <typename Row, typename Waited>
  bool WaitAgain(NodeId self, NodeId j, std::uint64_t round, const Row& row, Waited waited) {
    auto it = by_.find(j);
    if (it == by_.end() || it->second.timeouts < kRounds || round < it->second.round) return false;
    for (const auto& e : row)
      if (e.col != self && e.col != j && waited(e.col)) return false;
    by_.erase(it);
    return true;
  }

 private:
  struct Silence {
    int timeouts = 0;         // timeouts in a row at which its message was missing
    std::uint64_t round = 0;  // the round of the last one
  };
  std::map<NodeId, Silence> by_;
};

}  // namespace murmur::gossip
