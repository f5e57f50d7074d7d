// FedClient: a federated-learning client, transport-agnostic (acts only
// through core::Env).
//
// On a task for round r it takes the global model x, trains locally and
// answers with its result:
//   - E local epochs (steps = ceil(E n_i / batch)) or H steps;
//   - plain local SGD through LocalLearner::Train (with the learner's own
//     momentum), or, with FedProx (Li et al., MLSys 2020) and SCAFFOLD
//     (Karimireddy et al., ICML 2020), its own SGD loop on
//     LocalLearner::Gradient:  y <- y - lr (g(y) + mu (y - x) + c - c_i);
//   - SCAFFOLD option II: c_i+ = c_i - c + (x - y) / (tau lr); the client
//     sends Delta c_i = c_i+ - c_i next to Delta y = y - x;
//   - partial work: with a budget, it trains in chunks and stops when another
//     chunk would overrun, reporting the steps tau_i it took (FedNova);
//   - compressed uploads: Delta y goes through its compressor, whose
//     CompressorState keeps the client's error-feedback residual across the
//     rounds it is selected in (Seide et al. 2014; Karimireddy et al. 2019);
//   - DP: client-side clipping of Delta y to C and Gaussian noise;
//   - memory: the client holds the global and local models only while it
//     works on a task (allocated when a task comes, freed once its result is
//     sent), so a population of a million clients costs what the selected
//     ones hold; what must outlive a task stays (the error-feedback residual,
//     SCAFFOLD's c_i, FedBN's buffer tensors, its random streams);
//   - SecAgg+ (federated/secagg_client.h): on a task flagged for secure
//     aggregation it advertises its keys at once, trains meanwhile, and
//     answers with the masked vector [w Delta y, w, w loss], w = n_i / n_max
//     (pre-scaled for sample-weighted FedAvg: the server divides the sum's
//     first part by its w part). A client configured for SecAgg ignores
//     tasks that are not, so it never sends its update in the clear.
//
// Thread-safety: one Env executor; training runs inside Env::Offload.
#pragma once

#include "core/local_tensors.h"

#include <atomic>
#include <limits>

#include <memory>

#include "compression/compressor.h"
#include "core/learner.h"
#include "federated/attack.h"
#include "federated/messages.h"
#include "federated/secagg_client.h"

namespace murmur::federated {

struct ClientOptions {
  int local_steps = 0;      // H; 0: use local_epochs
  double local_epochs = 1;  // E, when local_steps == 0
  int batch = 32;           // the learner's batch size (turns epochs into steps)
  double num_samples = 0;   // n_i, the weight reported to the server
  double prox_mu = 0;       // FedProx mu (0: off)
  bool scaffold = false;
  std::shared_ptr<const compression::Compressor> upload;  // null: dense fp32
  double dp_clip = 0;                                     // client-side clipping norm (0: off)
  double dp_noise_stddev = 0;                             // client-side noise stddev per coordinate
  int chunks = 8;  // partial work: budget checked this many times per task
  // SecAgg+ (off when secagg.identity is null).
  SecAggClientOptions secagg;
  double secagg_weight_scale = 1;  // n_max, a public bound on n_i: the weight sent is n_i / n_max
  double secagg_dropout = 0;       // fault injection: chance per round of going silent after key sharing
  // A client that poisons its own update (sign-flip or gaussian, federated/attack.h):
  // it sends ApplyAttack's rewrite of its Delta y as a dense update, never its model,
  // so the server holds exactly what the simulator's server-side attack writes.
  // Gaussian noise comes from the client's kAttack stream. Other kinds: no effect here.
  AttackKind attack = AttackKind::kNone;
  double attack_scale = 1.0;
  // FedBN: the model's buffer tensors ("buffer:...", core/local_tensors.h)
  // stay the client's own: a task's global model replaces every other value,
  // and from its second task on the client trains on its own buffers.
  bool local_buffers = false;
};

class FedClient final : public MessageSink {
 public:
  // `learner` and `layout` must outlive the client; `server` is where results go.
  FedClient(Env& env, NodeId server, LocalLearner& learner, const Layout& layout, ClientOptions options);

  void OnMessage(NodeId from, MessagePtr msg) override;
  // Changes where tasks come from and results go (a vehicle that now sits
  // nearest to another roadside unit). A result of a task in progress goes
  // to the new server, which drops it as not its own.
  void set_server(NodeId server) { server_ = server; }

  // The local model of the task in progress (empty between tasks).
  const ParamVector& params() const { return y_; }
  std::uint64_t tasks_done() const { return tasks_done_; }
  // The mean training loss of the last task's local steps (0 before the
  // first); any thread may read it.
  double last_loss() const { return last_loss_; }
  std::size_t state_floats() const;

 private:
  int TargetSteps() const;
  void RunChunk();
  void Finish();
  void Step(int steps);
  void SendMaskedResult();
  // After a task: keeps FedBN's buffer tensors and frees the models.
  void ReleaseModels();

  Env& env_;
  NodeId server_;
  LocalLearner& learner_;
  const Layout& layout_;
  ClientOptions options_;
  Rng rng_;
  compression::CompressorState state_;
  ParamVector x_;          // the global model of the current task
  ParamVector y_;          // the local model
  ParamVector c_;          // server control variate (SCAFFOLD)
  std::vector<float> ci_;  // own control variate (SCAFFOLD), sized on first use
  FedHeader task_;
  bool busy_ = false;
  LocalTensors local_;    // local_buffers: the buffer tensors it keeps
  bool trained_ = false;  // a task has been trained: local_ holds the client's own values
  int target_ = 0, done_ = 0;
  Nanos started_{0}, deadline_{0};
  double loss_sum_ = 0;
  std::atomic<double> last_loss_{std::numeric_limits<double>::quiet_NaN()};  // NaN: no step yet
  std::uint64_t tasks_done_ = 0;
  std::unique_ptr<SecAggClient> secagg_;  // this round's session
  Rng dropout_rng_;
  Rng attack_rng_;
};

}  // namespace murmur::federated
