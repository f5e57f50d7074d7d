#include "gossip/round_topology.h"

#include "core/check.h"

namespace murmur::gossip {

RoundTopology::RoundTopology(topology::MixingMatrix w) : cache_(1) {
  auto e = std::make_unique<Entry>();
  e->round = 0;
  e->out = w.Transposed();
  e->in = std::move(w);
  cache_[0] = std::move(e);
}

RoundTopology::RoundTopology(std::function<topology::MixingMatrix(std::uint64_t)> make, std::size_t window)
    : make_(std::move(make)), window_(window), cache_(window) {
  MURMUR_CHECK(window_ > 0);
}

NodeId RoundTopology::size() const {
  if (cache_[0]) return cache_[0]->in.size();
  return make_(0).size();
}

RoundTopology::Entry& RoundTopology::Get(std::uint64_t round) {
  if (!make_) return *cache_[0];
  auto& slot = cache_[round % window_];
  if (!slot || slot->round != round) {
    auto e = std::make_unique<Entry>();
    e->round = round;
    e->in = make_(round);
    e->out = e->in.Transposed();
    slot = std::move(e);
  }
  return *slot;
}

const topology::MixingMatrix& RoundTopology::In(std::uint64_t round) { return Get(round).in; }
const topology::MixingMatrix& RoundTopology::Out(std::uint64_t round) { return Get(round).out; }

}  // namespace murmur::gossip
