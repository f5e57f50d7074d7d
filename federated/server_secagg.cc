// FedServer's SecAgg+ rounds (see federated/server.h): one SecAggServer
// session per synchronous round, whose sum replaces the streamed results.
#include <memory>

#include "federated/server.h"

namespace murmur::federated {

void FedServer::StartSecureRound(std::vector<NodeId> clients) {
  SecAggServerOptions o = options_.secagg;
  o.length = x_.size() + 2;  // [w Delta, w, w loss]
  if (o.input_timeout.count() == 0) o.input_timeout = options_.deadline;
  const std::uint64_t r = round_;
  secagg_ =
      std::make_unique<SecAggServer>(env_, r, std::move(clients), std::move(o), [this, r](SecAggOutcome out) {
        // The session may still be on the call stack: finish the round from a fresh event.
        auto held = std::make_shared<SecAggOutcome>(std::move(out));
        env_.StartTimer(Nanos(0), [this, r, held] {
          if (open_ && round_ == r) OnSecAggDone(std::move(*held));
        });
      });
  secagg_->Start();
}

void FedServer::OnSecAggDone(SecAggOutcome outcome) {
  secagg_.reset();
  secagg_dropped_ += outcome.dropped;
  secagg_status_ = outcome.status;
  const std::size_t d = x_.size();
  results_ = 0;
  if (!outcome.status.ok()) {
    ++secagg_aborted_;
  } else if (outcome.sum.size() == d + 2 && outcome.sum[d] > 0) {
    for (std::size_t j = 0; j < d; ++j) acc_[j] = outcome.sum[j];
    weight_sum_ = outcome.sum[d];
    results_ = outcome.survivors.size();
    loss_sum_ =
        outcome.sum[d + 1] / outcome.sum[d] * static_cast<double>(results_);  // weighted mean x results
    tau_sum_ = weight_sum_;
    accepted_ += results_;
  }
  CloseRound();
}

}  // namespace murmur::federated
