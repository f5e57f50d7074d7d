// The algorithms a JobSpec may name, in one place: the gossip ones (run by
// engine/gossip_builder.h on gossip/ classes) and the federated ones (run by
// federated::FedServer and FedClient with options from
// engine/federated_builder.h). Both hosts, the simulator and murmurd, run
// every one of them.
//
// Thread-safety: pure functions over constant tables.
#pragma once

#include <span>
#include <string>

namespace murmur::engine {

// dpsgd, dpsgd-cta, diloco, allreduce, diloco-allreduce, push-sum, dsgt, gossip-learning.
std::span<const char* const> GossipAlgorithms();
// fedavg, fedprox, scaffold, fedavgm, fedadam, fedyogi, fedadagrad, fedbuff.
std::span<const char* const> FederatedAlgorithms();

bool IsGossipAlgorithm(const std::string& algorithm);
bool IsFederatedAlgorithm(const std::string& algorithm);
// D-PSGD in either mixing order, and DiLoCo (D-PSGD with an outer
// optimizer): the one gossip family that sends compressed differences
// (CHOCO-SGD) and mixes with a robust rule.
bool IsDpsgd(const std::string& algorithm);

// allreduce and diloco-allreduce: exact averaging by a ring all-reduce
// (gossip/ring_allreduce.h), without and with DiLoCo's outer step.
bool IsRingAllReduce(const std::string& algorithm);

// "a, b, c" of every algorithm, for error messages.
std::string AlgorithmList();

}  // namespace murmur::engine
