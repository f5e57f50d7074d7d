#include "engine/learner.h"

#include "ml/schedule.h"

namespace murmur::engine {

Result<ml::MlLearnerOptions> LearnerOptionsOf(const proto::JobSpec& s) {
  ml::MlLearnerOptions o;
  o.batch = static_cast<int>(s.batch());
  o.lr = s.lr();
  o.momentum = s.momentum();
  o.weight_decay = s.weight_decay();
  o.adamw = s.optimizer() == "adamw";
  o.beta1 = s.adam_beta1();
  o.beta2 = s.adam_beta2();
  MURMUR_ASSIGN_OR_RETURN(o.schedule, ml::ParseRoundSchedule(s.lr_schedule(), s.lr(), s.lr_min(), s.rounds(),
                                                             s.local_steps(), "spec"));
  return o;
}

}  // namespace murmur::engine
