// The parts of PlanJob (engine/plan.h): the checks of the fields every spec
// has, of a gossip spec and of a federated one, each filling its part of the
// plan as it reads the fields. Errors name the field and its limit.
//
// Thread-safety: pure functions.
#pragma once

#include <string>

#include "core/status.h"
#include "engine/plan.h"
#include "proto/job_spec.pb.h"

namespace murmur::engine::internal {

// InvalidArgument "spec field 'FIELD' WHY".
Status Bad(const std::string& field, const std::string& why);
// A number as a person writes it: 0.5, 10, 1e+30.
std::string Num(double x);

// The fields every spec has; the learner's options from them.
Status PlanCommon(const proto::JobSpec& s, ml::MlLearnerOptions& learner);
Status PlanGossip(const proto::JobSpec& s, Host host, GossipPlan& plan);
Status PlanFederated(const proto::JobSpec& s, Host host, FederatedPlan& plan);

}  // namespace murmur::engine::internal
