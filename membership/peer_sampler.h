// MembershipPeerSampler: a gossip::PeerSampler over a membership view.
//
// MembershipPeerSampler draws uniformly from the alive members of a
// Membership's view (suspect, dead and left members excluded; this node is
// never drawn): Sample(k) returns min(k, alive) distinct members, every
// k-subset equally likely (a partial Fisher-Yates shuffle), from the stream
// Env::MakeRng(kPeerSampling), so a simulation draws the same peers for the
// same seed. Over a SWIM view, which converges to the full membership, this
// is the "ideal" uniform peer-sampling service of Jelasity et al. (ACM TOCS
// 2007) rather than a partial-view protocol such as Cyclon: a full view costs
// O(n) memory per node, which is small for the groups murmur targets, and
// gives unbiased samples without a shuffle protocol.
//
// Thread-safety: the Env's executor only. The Membership must outlive the sampler.
#pragma once

#include <vector>

#include "core/env.h"
#include "gossip/peer_sampler.h"
#include "membership/membership.h"

namespace murmur::membership {

class MembershipPeerSampler final : public gossip::PeerSampler {
 public:
  MembershipPeerSampler(Env& env, const Membership& membership)
      : membership_(membership), rng_(env.MakeRng(RngPurpose::kPeerSampling)) {}

  // O(alive members) per call.
  std::vector<NodeId> Sample(std::size_t k) override;

 private:
  const Membership& membership_;
  Rng rng_;
};

}  // namespace murmur::membership
