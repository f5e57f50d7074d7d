#include "engine/plan.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <string>
#include <utility>

#include "core/check.h"
#include "engine/algorithms.h"
#include "engine/plan_parts.h"
#include "engine/topology.h"
#include "ml/dataset_spec.h"
#include "ml/schedule.h"
#include "ml/torch/torchscript_model.h"

namespace murmur::engine {

namespace internal {

Status Bad(const std::string& field, const std::string& why) {
  return Status::InvalidArgument("spec field '" + field + "' " + why);
}

std::string Num(double x) {
  std::string s = std::to_string(x);
  while (s.size() > 1 && s.back() == '0') s.pop_back();
  if (!s.empty() && s.back() == '.') s.pop_back();
  return s;
}

namespace {
bool Finite(double x) { return std::isfinite(x); }
}  // namespace

// The fields every spec has.
Status PlanCommon(const proto::JobSpec& s, ml::MlLearnerOptions& learner) {
  const bool federated = IsFederatedAlgorithm(s.algorithm());
  if (!federated && !IsGossipAlgorithm(s.algorithm()))
    return Bad("algorithm", "'" + s.algorithm() + "' is not one of " + AlgorithmList());
  if (s.algorithm() != "diloco" && s.algorithm() != "diloco-allreduce") {
    // DiLoCo's outer step exists only in DiLoCo: a value other than the
    // default elsewhere would be silently ignored, so it is refused (as
    // groups, overlap and collective are outside the all-reduce).
    const proto::JobSpec defaults;
    const std::string applies = "applies to diloco and diloco-allreduce (got " + s.algorithm() + ")";
    if (s.outer_optimizer() != defaults.outer_optimizer()) return Bad("outer_optimizer", applies);
    if (s.outer_lr() != defaults.outer_lr()) return Bad("outer_lr", applies);
    if (s.outer_momentum() != defaults.outer_momentum()) return Bad("outer_momentum", applies);
    if (s.outer_beta2() != defaults.outer_beta2()) return Bad("outer_beta2", applies);
  }
  if (federated) {
    if (s.nodes() < 1 || s.nodes() > kMaxFederatedClients)
      return Bad("nodes", "must be in [1, " + std::to_string(kMaxFederatedClients) + "] clients, got " +
                              std::to_string(s.nodes()));
  } else if (s.nodes() < 2 || s.nodes() > kMaxGossipNodes) {
    return Bad("nodes", "must be in [2, " + std::to_string(kMaxGossipNodes) + "], got " +
                            std::to_string(s.nodes()) +
                            " (gossip needs 2 nodes; one model alone is `murmur train`)");
  }
  MURMUR_RETURN_IF_ERROR(ml::CheckPartitionSpec(s.partition()).WithContext("spec field 'partition'"));
  if (!s.model_blake2b().empty()) {
    if (!ml::IsTorchScriptSpec(s.model()))
      return Bad("model_blake2b", "applies to torchscript: models only (the model is '" + s.model() + "')");
    if (s.model_blake2b().size() != 128 ||
        s.model_blake2b().find_first_not_of("0123456789abcdef") != std::string::npos)
      return Bad("model_blake2b",
                 "must be 128 lowercase hex digits (b2sum FILE), got '" + s.model_blake2b() + "'");
  }
  if (s.model_buffers() != "average" && s.model_buffers() != "local")
    return Bad("model_buffers", "must be average or local, got '" + s.model_buffers() + "'");
  // Gossip algorithms that send running sums, trackers or aged models do not mix models whole.
  const std::string& a = s.algorithm();
  if (s.model_buffers() == "local" && IsGossipAlgorithm(a) && !IsDpsgd(a) && !IsRingAllReduce(a))
    return Bad("model_buffers",
               "local buffers need an algorithm that averages models (dpsgd, dpsgd-cta, diloco, "
               "allreduce, diloco-allreduce or a federated one), not " +
                   s.algorithm());
  if (s.rounds() < 1) return Bad("rounds", "must be at least 1");
  if (s.local_steps() < 1 || s.local_steps() > 100000) return Bad("local_steps", "must be in [1, 100000]");
  if (s.batch() < 1 || s.batch() > 65536) return Bad("batch", "must be in [1, 65536]");
  if (!(s.lr() > 0) || !Finite(s.lr())) return Bad("lr", "must be a positive number");
  if (!(s.momentum() >= 0 && s.momentum() < 1))
    return Bad("momentum", "must be in [0, 1), got " + Num(s.momentum()));
  if (!(s.weight_decay() >= 0) || !Finite(s.weight_decay()))
    return Bad("weight_decay", "must be >= 0, got " + Num(s.weight_decay()));
  if (s.optimizer() != "sgd" && s.optimizer() != "adamw")
    return Bad("optimizer", "must be sgd or adamw, got '" + s.optimizer() + "'");
  if (s.optimizer() == "adamw" && s.momentum() != 0)
    return Bad("momentum", "is SGD's; adamw has adam_beta1 (got momentum " + Num(s.momentum()) + ")");
  if (!(s.adam_beta1() >= 0 && s.adam_beta1() < 1))
    return Bad("adam_beta1", "must be in [0, 1), got " + Num(s.adam_beta1()));
  if (!(s.adam_beta2() >= 0 && s.adam_beta2() < 1))
    return Bad("adam_beta2", "must be in [0, 1), got " + Num(s.adam_beta2()));
  if (s.lr_schedule() != "constant" && federated)
    return Bad("lr_schedule", "applies to gossip algorithms only (got '" + s.lr_schedule() + "' with " +
                                  s.algorithm() + ")");
  MURMUR_ASSIGN_OR_RETURN(learner.schedule, ml::ParseRoundSchedule(s.lr_schedule(), s.lr(), s.lr_min(),
                                                                   s.rounds(), s.local_steps(), "spec"));
  learner.batch = static_cast<int>(s.batch());
  learner.lr = s.lr();
  learner.momentum = s.momentum();
  learner.weight_decay = s.weight_decay();
  learner.adamw = s.optimizer() == "adamw";
  learner.beta1 = s.adam_beta1();
  learner.beta2 = s.adam_beta2();
  if (!(s.round_timeout() >= 0 && s.round_timeout() <= 86400))
    return Bad("round_timeout",
               "must be in [0, 86400] seconds (0: fitted to the host), got " + Num(s.round_timeout()));
  if (!(s.round_period() >= 0 && s.round_period() <= 86400))
    return Bad("round_period",
               "must be in [0, 86400] seconds (0: no round clock), got " + Num(s.round_period()));
  if (s.round_period() > 0 && !IsDpsgd(s.algorithm()))
    return Bad("round_period", "is for the D-PSGD family (dpsgd, dpsgd-cta, diloco), not " + s.algorithm());
  return Status::Ok();
}

}  // namespace internal

namespace {

std::atomic<std::uint64_t> plans_made{0};

// The enum follows engine/algorithms.cc's lists: the gossip names in order,
// then the federated ones from kFedAvg.
Algorithm AlgorithmOf(const std::string& name) {
  const auto index = [&](std::span<const char* const> names) {
    return static_cast<int>(std::find(names.begin(), names.end(), name) - names.begin());
  };
  if (IsFederatedAlgorithm(name))
    return static_cast<Algorithm>(static_cast<int>(Algorithm::kFedAvg) + index(FederatedAlgorithms()));
  return static_cast<Algorithm>(index(GossipAlgorithms()));
}

}  // namespace

bool JobPlan::dpsgd_family() const {
  return algorithm_ == Algorithm::kDpsgd || algorithm_ == Algorithm::kDpsgdCta ||
         algorithm_ == Algorithm::kDiloco;
}

bool JobPlan::ring_allreduce() const {
  return algorithm_ == Algorithm::kAllReduce || algorithm_ == Algorithm::kDilocoAllReduce;
}

const GossipPlan& JobPlan::gossip() const {
  MURMUR_CHECK(!federated());
  return gossip_;
}

const FederatedPlan& JobPlan::fed() const {
  MURMUR_CHECK(federated());
  return fed_;
}

Result<JobPlan> PlanJob(const proto::JobSpec& spec, Host host) {
  JobPlan plan;
  MURMUR_RETURN_IF_ERROR(internal::PlanCommon(spec, plan.learner_));
  plan.algorithm_ = AlgorithmOf(spec.algorithm());  // a known name: PlanCommon checked it
  plan.spec_ = spec;
  plan.host_ = host;
  plan.local_buffers_ = spec.model_buffers() == "local";
  plan.vehicles_ = TopologyKind(spec.topology()) == "vehicles";
  if (plan.federated()) {
    MURMUR_RETURN_IF_ERROR(internal::PlanFederated(spec, host, plan.fed_));
    MURMUR_ASSIGN_OR_RETURN(plan.dense_, gossip::CodecSpec::Parse("none"));
  } else {
    MURMUR_RETURN_IF_ERROR(internal::PlanGossip(spec, host, plan.gossip_));
  }
  plans_made.fetch_add(1, std::memory_order_relaxed);
  return plan;
}

std::uint64_t JobsPlanned() { return plans_made.load(std::memory_order_relaxed); }

std::string CompressionOf(const proto::JobSpec& spec) {
  if (spec.compression() != "default") return spec.compression();
  // DiLoCo communicates H times less already: whole models unless asked.
  return IsDpsgd(spec.algorithm()) && spec.algorithm() != "diloco" ? "topk:0.01" : "none";
}

bool StateFollowsGraph(const proto::JobSpec& spec) {
  if (IsFederatedAlgorithm(spec.algorithm()) || IsRingAllReduce(spec.algorithm())) return false;
  auto codec = gossip::CodecSpec::Parse(CompressionOf(spec));
  return !codec.ok() || !codec->full_model_safe;
}

}  // namespace murmur::engine
