// TapEnv: an Env decorator that shows a ByzantineCoalition (sim/adversary/byzantine.h)
// every message an honest node sends, before the network sees it, so that
// omniscient attackers (ALIE, IPM, dissensus) can craft theirs from the
// round's honest models. Everything but Send is the wrapped Env's
// (core/env_wrapper.h).
//
// Thread-safety: as the wrapped Env (the simulator's event loop).
// Ownership: the wrapped Env and the coalition must outlive the tap.
#pragma once

#include "core/env_wrapper.h"
#include "sim/adversary/byzantine.h"

namespace murmur::sim {

class TapEnv final : public EnvWrapper {
 public:
  TapEnv(Env* target, ByzantineCoalition& coalition) : EnvWrapper(target), coalition_(coalition) {}

  void Send(NodeId to, MessagePtr msg) override {
    coalition_.Observe(self(), msg);
    EnvWrapper::Send(to, std::move(msg));
  }

 private:
  ByzantineCoalition& coalition_;
};

}  // namespace murmur::sim
