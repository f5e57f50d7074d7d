// IndexEnv: how a federated job's engine sees the daemon. The engine
// (federated/server.h, federated/client.h) numbers clients 0 .. n-1 and the
// server n, as the simulator does; the daemons of the job are ids 0 .. n with
// the aggregator anywhere among them. IdMap turns one numbering into the
// other (client index c is node id c below the aggregator, c + 1 above it),
// and IndexEnv is a JobEnv seen through it, so that the engine's ids and
// random streams (seed, index, purpose) are the ones `murmur sim` gives the
// same run. A purpose made secret (MakeSecret) is the exception: its stream is
// seeded from the system's randomness instead (DP noise on daemons, which the
// job's operators, who know the seed, must not be able to subtract).
//
// Thread-safety: as core::Env; `target` must outlive the IndexEnv.
#pragma once

#include <cstring>
#include <set>

#include "core/env.h"
#include "core/env_wrapper.h"
#include "crypto/key_agreement.h"
#include "node/job/job_env.h"

namespace murmur::node {

// Client indices 0 .. clients-1 and the server index `clients` <-> node ids.
struct IdMap {
  NodeId aggregator = 0, clients = 0;
  NodeId ToNode(NodeId index) const {
    return index == clients ? aggregator : (index < aggregator ? index : index + 1);
  }
  NodeId ToIndex(NodeId node) const {
    return node == aggregator ? clients : (node < aggregator ? node : node - 1);
  }
};

class IndexEnv final : public EnvWrapper {
 public:
  IndexEnv(JobEnv& target, IdMap map, std::uint64_t seed) : EnvWrapper(&target), map_(map), seed_(seed) {}
  NodeId self() const override { return map_.ToIndex(EnvWrapper::self()); }
  void Send(NodeId to, MessagePtr msg) override { EnvWrapper::Send(map_.ToNode(to), std::move(msg)); }
  void Refuse(NodeId from, Refusal why) override { EnvWrapper::Refuse(map_.ToNode(from), why); }
  Rng MakeRng(RngPurpose purpose) const override {
    if (secret_.count(purpose) == 0) return Rng(seed_, self(), purpose);
    const crypto::MaskSeed random = crypto::RandomSeed();
    std::uint64_t seed = 0;
    std::memcpy(&seed, random.data(), sizeof(seed));
    return Rng(seed, self(), purpose);
  }
  // Streams of `purpose` made after this call are seeded from randombytes.
  void MakeSecret(RngPurpose purpose) { secret_.insert(purpose); }

 private:
  IdMap map_;
  std::uint64_t seed_;
  std::set<RngPurpose> secret_;
};

}  // namespace murmur::node
