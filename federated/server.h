// FedServer: the aggregator of federated learning, transport-agnostic (acts
// only through core::Env; clients are nodes 0 .. num_clients - 1).
//
// Synchronous rounds (FedAvg and its variants): select ceil(over_commit K)
// clients (ClientSelector), send each a task with the global model, keep the
// first K results, and close the round when K results are in, when every
// selected client still online has answered, or at the deadline (stragglers'
// late results are dropped, and a straggler is avoided by selection until its
// late result is in; with partial work, clients are told a budget and report
// what they managed). A result flagged kFlagEmpty (an edge aggregator none of
// whose clients answered; federated/edge.h) counts as an answer and adds nothing. Aggregation streams each
// result into one double-precision accumulator, Delta = sum_i w_i Delta_i / sum_i w_i with w_i = n_i, and
// never holds K models unless the robust rule or a simulated attack needs them all. FedNova (Wang et al.,
// NeurIPS 2020, Eq. 6 for local SGD): Delta = (sum_i p_i tau_i) sum_i p_i Delta_i / tau_i, p_i = w_i / sum w.
// The ServerOptimizer then moves the global model. SCAFFOLD: c <- c + (|S|/N)
// mean_i Delta c_i.
//
// Asynchronous buffered aggregation (FedBuff; Nguyen et al., AISTATS 2022):
// `concurrency` clients train at all times; each result is weighted by
// n_i / sqrt(1 + staleness) (staleness = server updates since its task) and
// buffered; every `buffer` results the server applies the buffer's weighted
// mean Delta (weights normalized by sum n_i) and replaces each finished
// client with a new one at once.
//
// DP-FedAvg (federated/privacy.h): server-side clipping of every Delta_i to C,
// sum, N(0, (z C)^2) noise, division by K; or client-side (the clients clip
// and add noise). The RdpAccountant is charged with q = K / N before each
// round; a round that would take epsilon past the budget is not run and the
// server stops (stop_reason() says so).
//
// SecAgg+ (federated/secagg_server.h; synchronous FedAvg-family rounds
// without DP, robust rules, SCAFFOLD or FedNova): tasks carry
// kFlagSecureAggregation, and instead of results the server runs one
// SecAggServer session with the selected online clients. Each client sends
// [w Delta, w, w loss] masked; the server learns only the survivors' sum,
// takes Delta = sum(w Delta) / sum(w) and applies it. An aborted session
// leaves the model as it is (the round counts, stop_reason is unchanged).
//
// Resuming (ExportState / ImportState): between
// rounds the server's whole state besides the global model is a ServerState
// of named double vectors and scalars: the round count, the optimizer's
// moments, SCAFFOLD's c, the RDP accountant's spent privacy, the adaptive
// clip norm, the selection stream's position and what Oort learned of each
// client, the stragglers still avoided, the clients that contributed, centered
// clipping's last aggregate and the noise and attack streams' positions. A
// server built with the same options and x0 = the model at export, given that
// state before Start(), makes the same updates as one never stopped. What
// lives only inside an open round (tasks out, results in, a SecAgg+ session)
// is not state: a resumed round starts afresh, as do FedBuff's tasks in flight.
//
// Thread-safety: one Env executor. The observer is told after each server update.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "compression/compressor.h"
#include "core/round_observer.h"
#include "federated/accountant.h"
#include "federated/admission.h"
#include "federated/aggregation.h"
#include "federated/attack.h"
#include "federated/messages.h"
#include "federated/privacy.h"
#include "federated/secagg_server.h"
#include "federated/selection.h"
#include "federated/strategy.h"

namespace murmur::federated {

struct ServerOptions {
  NodeId num_clients = 0;
  std::uint64_t rounds = 100;          // server updates to make
  std::size_t clients_per_round = 10;  // K
  double over_commit = 1.0;            // select ceil(over_commit K) and keep the first K results
  Nanos deadline{0};                   // a round closes this long after it opens (0: no deadline)
  bool partial_work = false;           // tell clients a budget of work_fraction * deadline
  double work_fraction = 0.8;
  std::size_t min_results = 1;  // fewer results at the deadline: the model stays as it is
  bool fednova = false;
  bool scaffold = false;
  bool request_model = false;  // ask for models instead of differences (lossless, exact FedAvg)
  // A public bound on a result's weight (the sample count n_i it claims):
  // the largest client share of the job's partition, or with edge
  // aggregators all of it. 0: no bound (a daemon's clients with local data).
  double max_weight = 0;
  // A bound on a result's difference: ||Delta_i|| <= plausibility ||x||
  // (federated/admission.h; the spec field `plausibility`). 0: no bound.
  double plausibility = 0;
  SelectionOptions selection;
  // Which clients a failure detector holds reachable (empty: all): a client
  // it returns false for is never selected, whatever the selection kind (a
  // daemon's membership; SetOnline still says whether a task already sent is
  // given up).
  std::function<bool(NodeId client)> available;
  ServerOptimizerOptions optimizer;
  RobustOptions robust;
  // Differential privacy (off when dp_clip == 0).
  double dp_clip = 0;           // C (initial C with adaptive clipping)
  double dp_noise = 0;          // z, the noise multiplier
  bool dp_client_side = false;  // the clients clip and add noise; the server only accounts
  bool dp_adaptive = false;
  AdaptiveClipOptions adaptive;
  double epsilon_budget = 0;  // 0: no budget
  double dp_delta = 1e-5;
  // FedBuff.
  bool async = false;
  std::size_t concurrency = 0;  // clients training at once (0: 2 K)
  std::size_t buffer = 0;       // results per server update (0: K)
  // Broadcast coding of the global model (null: fp32), built without error feedback.
  std::shared_ptr<const compression::Compressor> broadcast;
  // Simulated attackers: attacker[i] says whether client i is Byzantine.
  AttackKind attack = AttackKind::kNone;
  double attack_scale = 1.0;
  std::vector<bool> attacker;
  // SecAgg+ (length and timeouts are filled in by the server when 0: the
  // input timeout defaults to the deadline).
  bool secure_aggregation = false;
  SecAggServerOptions secagg;
  // Synchronous rounds (murmurd sets it; the simulator does not, see
  // docs/security.md "Insiders"): a client that is online, gets a task and
  // sends nothing at all for it (no result, late or refused, no SecAgg+
  // message) kSilentTasks times in a row is left out of selection for
  // kStragglerRounds x 2^(misses - kSilentTasks) rounds, then tried again;
  // anything it sends ends that. So it costs O(log rounds) deadlines, not one
  // a round.
  bool leave_out_silent = false;
};
inline constexpr std::uint32_t kSilentTasks = 3;

struct ServerState {
  std::map<std::string, std::vector<double>> vectors;
  std::map<std::string, double> scalars;
};

class FedServer final : public MessageSink {
 public:
  // `observer` (may be null) must outlive the server.
  FedServer(Env& env, ParamVector x0, ServerOptions options, RoundObserver* observer);

  void Start();
  void OnMessage(NodeId from, MessagePtr msg) override;
  // Availability, as the runtime (or the simulator's churn) reports it.
  void SetOnline(NodeId client, bool online);

  const ParamVector& params() const { return x_; }
  std::uint64_t rounds_done() const { return round_; }
  bool finished() const { return finished_; }
  const std::string& stop_reason() const { return stop_reason_; }
  double epsilon() const;
  double clip() const { return clip_.clip(); }
  std::uint64_t results_accepted() const { return accepted_; }
  std::uint64_t results_dropped() const { return dropped_; }
  // Clients with at least one accepted result so far (a deadline that some
  // clients can never meet leaves their data out for good).
  std::size_t contributors() const { return contributors_; }
  // The clients (indices, ascending) the open round still waits for:
  // selected, online, no answer yet (buffered: training).
  std::vector<NodeId> WaitingFor() const {
    std::vector<NodeId> out;
    for (std::size_t c = 0; open_ && c < pending_.size(); ++c)
      if (pending_[c]) out.push_back(static_cast<NodeId>(c));
    return out;
  }
  std::size_t state_floats() const;
  std::uint64_t secagg_rounds_aborted() const { return secagg_aborted_; }
  std::uint64_t secagg_clients_dropped() const { return secagg_dropped_; }
  const Status& secagg_last_status() const { return secagg_status_; }
  // leave_out_silent: the clients the last round left out as silent, and for how many rounds.
  const std::vector<std::pair<NodeId, std::uint64_t>>& left_out_silent() const { return left_out_; }
  // The last SecAgg+ round's complaints, (complainer, accused): each accused
  // client was excluded from that round; one accused by two or more clients
  // was also refused (bad_shares) and booked (docs/security.md, Insiders).
  const std::vector<std::pair<NodeId, NodeId>>& secagg_last_complaints() const { return secagg_complaints_; }

  // The state to resume from (see above): call between rounds, i.e. from the
  // observer's OnRoundDone or before Start(). Doubles hold every value exactly
  // (counters below 2^53).
  ServerState ExportState() const;
  // Takes a state ExportState returned (the "noise/" and "attack/" stream
  // positions may be left out: those streams then start afresh). REQUIRES:
  // before Start(), with the options the state was exported under.
  // InvalidArgument naming the entry that is missing, of the wrong size or
  // out of range; a server that refused a state must not be started.
  Status ImportState(const ServerState& state);

 private:
  bool Buffered() const;
  // A result the round expects, refused (federated/admission.h): counted,
  // booked, and the client's empty answer.
  void RefuseResult(NodeId from, Refusal why);
  void Heard(NodeId client);
  void CountSilent();
  void StartRound();
  void SendTask(NodeId client);
  // Uses a result whose difference LoadDelta put in delta_.
  void OnResult(NodeId from, const FedMessage& m);
  void LoadDelta(const FedMessage& m);
  void Accumulate(double weight, double steps, std::span<const double> dc);
  void CloseRound();
  // The simulated attack on the held updates, and the refusal of crafted
  // ones that are implausible (federated/admission.h, RefusedAttackers).
  void PoisonHeld();
  void Apply(std::span<double> delta);
  void Finish(std::string reason);
  void MaybeClose();
  void StartSecureRound(std::vector<NodeId> clients);
  void OnSecAggDone(SecAggOutcome outcome);
  // Ok, or why a SecAgg+ round's sum is not applied (its mean difference is implausible).
  Status JudgeSecureSum(const SecAggOutcome& outcome);

  Env& env_;
  ServerOptions options_;
  RoundObserver* observer_;
  ParamVector x_;
  ResultBounds bounds_;  // what a result must satisfy (federated/admission.h), fixed at construction
  ServerOptimizer optimizer_;
  ClientSelector selector_;
  RdpAccountant accountant_;
  AdaptiveClip clip_;
  Rng noise_rng_, attack_rng_;
  compression::CompressorState broadcast_state_;
  ParamVector c_;  // SCAFFOLD server control variate
  std::uint64_t round_ = 0;
  bool open_ = false, finished_ = false;
  std::string stop_reason_;
  TimerId deadline_timer_ = 0;
  std::vector<std::uint8_t> pending_;  // selected, online, not answered (sync) / training (async)
  // Synchronous rounds: a client still working on a closed round's task (a
  // straggler) is avoided by selection (taken only when too few others are
  // left) until its late result comes in, it goes offline, or
  // kStragglerRounds rounds pass (its result may have been lost): selecting
  // it would queue the new upload behind the stale one.
  std::vector<std::uint64_t> straggling_until_;  // round before which it is not selected (0: none)
  // leave_out_silent: tasks in a row a client sent nothing for, whether it
  // sent anything this round, and the round before which it is left out.
  std::vector<std::uint32_t> misses_;
  std::vector<std::uint8_t> heard_;
  std::vector<std::uint64_t> silent_until_;
  std::vector<std::uint8_t> left_out_now_;
  std::vector<std::pair<NodeId, std::uint64_t>> left_out_;
  std::vector<std::uint8_t> busy_;
  std::vector<std::uint64_t> task_round_;
  std::vector<Nanos> task_time_;
  std::size_t outstanding_ = 0, results_ = 0, unclipped_ = 0;
  std::vector<double> acc_, acc_c_, delta_, last_;
  double weight_sum_ = 0, tau_sum_ = 0, loss_sum_ = 0;
  std::vector<ParamVector> held_;
  std::vector<double> held_weight_, held_tau_, held_loss_;
  std::vector<NodeId> held_from_;
  std::vector<bool> held_attacker_;
  ParamVector scratch_;
  std::uint64_t accepted_ = 0, dropped_ = 0;
  std::unique_ptr<SecAggServer> secagg_;
  std::uint64_t secagg_aborted_ = 0, secagg_dropped_ = 0;
  Status secagg_status_;
  std::vector<std::pair<NodeId, NodeId>> secagg_complaints_;
  std::vector<std::uint8_t> contributed_;
  std::size_t contributors_ = 0;
};

}  // namespace murmur::federated
