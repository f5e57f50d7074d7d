#include "engine/algorithms.h"

#include <algorithm>
#include <iterator>

namespace murmur::engine {

namespace {

constexpr const char* kGossip[] = {"dpsgd",    "dpsgd-cta", "diloco",         "allreduce", "diloco-allreduce",
                                   "push-sum", "dsgt",      "gossip-learning"};
constexpr const char* kFederated[] = {"fedavg",  "fedprox", "scaffold",   "fedavgm",
                                      "fedadam", "fedyogi", "fedadagrad", "fedbuff"};

bool In(std::span<const char* const> names, const std::string& name) {
  return std::any_of(names.begin(), names.end(), [&](const char* n) { return name == n; });
}

}  // namespace

std::span<const char* const> GossipAlgorithms() { return kGossip; }
std::span<const char* const> FederatedAlgorithms() { return kFederated; }
bool IsGossipAlgorithm(const std::string& a) { return In(kGossip, a); }
bool IsFederatedAlgorithm(const std::string& a) { return In(kFederated, a); }
bool IsRingAllReduce(const std::string& a) { return a == "allreduce" || a == "diloco-allreduce"; }
bool IsDpsgd(const std::string& a) { return a == "dpsgd" || a == "dpsgd-cta" || a == "diloco"; }

std::string AlgorithmList() {
  std::string out;
  for (auto names : {GossipAlgorithms(), FederatedAlgorithms()}) {
    for (const char* n : names) out += (out.empty() ? "" : ", ") + std::string(n);
  }
  return out;
}

}  // namespace murmur::engine
