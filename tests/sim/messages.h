// What the simulator's network tests send and receive: a message of a given
// size, a sink that records when (and from whom) messages arrived, and a
// device profile of given links.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/net/simulator.h"

namespace murmur::sim::testing {

struct Blob final : Message {
  explicit Blob(std::size_t n, std::uint64_t t = 0) : size(n), tag(t) {}
  std::uint32_t kind() const override { return 7; }
  std::size_t EncodedSize() const override { return size; }
  void EncodeTo(std::vector<std::uint8_t>& out) const override { out.resize(out.size() + size); }
  std::size_t size;
  std::uint64_t tag;
};

struct Recorder final : MessageSink {
  explicit Recorder(Simulator* s) : sim(s) {}
  void OnMessage(NodeId from, MessagePtr) override {
    arrivals.push_back(sim->now());
    senders.push_back(from);
  }
  Simulator* sim;
  std::vector<Nanos> arrivals;
  std::vector<NodeId> senders;
};

inline DeviceProfile Profile(double up_bps, double down_bps, double latency_ms) {
  DeviceProfile p;
  p.up_bps = up_bps;
  p.down_bps = down_bps;
  p.latency = Nanos(static_cast<std::int64_t>(latency_ms * 1e6));
  return p;
}

}  // namespace murmur::sim::testing
