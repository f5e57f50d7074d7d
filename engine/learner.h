// The local optimizer of every node of a JobSpec (ml::MlLearner's options):
// batch, learning rate, momentum, weight decay, and for gossip the
// learning-rate schedule over each node's local steps (rounds x
// local_steps). Both hosts give each node Rng(seed, id, kBatch) for its batches.
//
// Thread-safety: a pure function.
#pragma once

#include "core/status.h"
#include "ml/ml_learner.h"
#include "proto/job_spec.pb.h"

namespace murmur::engine {

// InvalidArgument names the field.
Result<ml::MlLearnerOptions> LearnerOptionsOf(const proto::JobSpec& spec);

}  // namespace murmur::engine
