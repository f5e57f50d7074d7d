#include "node/job/gossip_job.h"

#include <algorithm>

#include "core/check.h"
#include "core/log.h"
#include "gossip/codec.h"
#include "ml/dataset_spec.h"
#include "ml/ml_learner.h"
#include "ml/schedule.h"
#include "node/job/checkpoint.h"
#include "node/job/gossip_algorithm.h"
#include "node/job/job_data.h"
#include "node/job/job_env.h"

namespace murmur::node {

Status ValidateGossipJob(const proto::JobConfig& j, NodeId self) {
  (void)self;
  if (!IsGossipJob(j.algorithm()))
    return Status::InvalidArgument("job field 'algorithm': '" + j.algorithm() +
                                   "' is not a gossip algorithm murmurd runs (dpsgd, dpsgd-cta, push-sum, "
                                   "dsgt, gossip-learning)");
  MURMUR_RETURN_IF_ERROR(ml::CheckPartitionSpec(j.partition()).WithContext("job field 'partition'"));
  if (j.rounds() == 0 || j.batch() == 0 || j.local_steps() == 0 || j.checkpoint_every() == 0)
    return Status::InvalidArgument(
        "job fields rounds, batch, local_steps and checkpoint_every must be positive");
  if (!(j.lr() > 0) || !(j.round_timeout() > 0))
    return Status::InvalidArgument("job fields lr and round_timeout must be positive");
  MURMUR_RETURN_IF_ERROR(
      ml::ParseRoundSchedule(j.lr_schedule(), j.lr(), j.lr_min(), j.rounds(), j.local_steps(), "job")
          .status());
  if (!(j.gamma() >= 0 && j.gamma() <= 1))
    return Status::InvalidArgument("job field 'gamma': must be in [0, 1] (0 picks the default), got " +
                                   std::to_string(j.gamma()));
  if (!(j.momentum() >= 0 && j.momentum() < 1))
    return Status::InvalidArgument("job field 'momentum': must be in [0, 1), got " +
                                   std::to_string(j.momentum()));
  if (!(j.weight_decay() >= 0))
    return Status::InvalidArgument("job field 'weight_decay': must be >= 0, got " +
                                   std::to_string(j.weight_decay()));
  auto codec = gossip::CodecSpec::Parse(j.compression());
  if (!codec.ok()) return codec.status().WithContext("job field 'compression'");
  if (j.compression().rfind("powersgd", 0) == 0)
    return Status::InvalidArgument(
        "job field 'compression': PowerSGD's low-rank state is not checkpointed by "
        "murmurd; use topk, randk or a value coding");
  if (j.algorithm() == "dsgt" && j.momentum() != 0)
    return Status::InvalidArgument(
        "job field 'momentum': dsgt applies its gradients itself and takes no "
        "momentum (got " +
        std::to_string(j.momentum()) + ")");
  if (j.algorithm() == "gossip-learning") {
    if (!(j.period() > 0 && j.period() <= 86400))
      return Status::InvalidArgument("job field 'period': must be in (0, 86400] seconds, got " +
                                     std::to_string(j.period()));
    if (j.fanout() < 1 || j.fanout() >= j.nodes())
      return Status::InvalidArgument("job field 'fanout': must be in [1, nodes - 1], got " +
                                     std::to_string(j.fanout()));
  }
  const bool dpsgd = j.algorithm() == "dpsgd" || j.algorithm() == "dpsgd-cta";
  if (!codec->full_model_safe && !dpsgd)
    return Status::InvalidArgument("job field 'compression': " + j.algorithm() +
                                   " sends whole vectors; use none, fp16, bf16 or int8 (got '" +
                                   j.compression() + "')");
  return Status::Ok();
}

class GossipJobImpl final : public RoundObserver {
 public:
  GossipJobImpl(proto::JobConfig job, Env& env, std::string checkpoint_path, Job::OnEnd on_end,
                LocalData local)
      : job_(std::move(job)),
        local_(std::move(local)),
        env_(env, job_.seed(), JobTag(job_)),
        checkpoint_path_(std::move(checkpoint_path)),
        on_end_(std::move(on_end)) {}

  Status Init();
  Status InitAlgorithm();
  void OnRoundDone(NodeId, std::uint64_t round, double loss) override;
  // The state after the last completed round, kept for the next checkpoint.
  void Snapshot(std::uint64_t done);
  void WriteCheckpoint();
  void End(Job::End how) {
    if (ended_) return;
    ended_ = true;
    env_.Halt();
    if (on_end_) on_end_(how);
  }

  proto::JobConfig job_;
  LocalData local_;
  JobEnv env_;
  std::string checkpoint_path_;
  Job::OnEnd on_end_;
  ml::TrainTest data_;
  std::unique_ptr<ml::Model> model_;
  std::vector<ml::SampleIndex> samples_;  // this node's: all of data_.train
  std::unique_ptr<ml::MlLearner> learner_;
  JobTopology topology_;
  std::unique_ptr<GossipAlgorithm> node_;
  std::unique_ptr<ml::ModelWorkspace> eval_ws_;
  std::uint64_t start_round_ = 0;
  std::atomic<std::uint64_t> rounds_done_{0};
  std::atomic<double> accuracy_{-1};
  std::atomic<double> loss_{0};
  std::atomic<std::uint64_t> checkpoints_{0};
  std::uint64_t next_mix_ = 0;  // the lowest round not mixed yet
  std::atomic<std::uint64_t> mixed_twice_{0};
  std::atomic<std::uint64_t> skipped_{0};
  std::atomic<bool> ended_{false};
  mutable std::mutex mu_;
  Checkpoint last_;  // guarded by mu_: the state after round rounds_done_
  bool draining_ = false;
  std::function<bool(NodeId)> peer_alive_;
};

Status GossipJobImpl::Init() {
  const NodeId self = env_.self();
  MURMUR_RETURN_IF_ERROR(ValidateGossipJob(job_, self));
  MURMUR_ASSIGN_OR_RETURN(JobData loaded, LoadJobData(job_, local_, job_.nodes(), self));
  data_ = std::move(loaded.data);
  samples_ = std::move(loaded.samples);
  model_ = std::move(loaded.model);
  ml::MlLearnerOptions learner_options;
  learner_options.batch = static_cast<int>(job_.batch());
  learner_options.lr = job_.lr();
  learner_options.momentum = job_.momentum();
  learner_options.weight_decay = job_.weight_decay();
  MURMUR_ASSIGN_OR_RETURN(learner_options.schedule,
                          ml::ParseRoundSchedule(job_.lr_schedule(), job_.lr(), job_.lr_min(), job_.rounds(),
                                                 job_.local_steps(), "job"));
  learner_ = std::make_unique<ml::MlLearner>(*model_, data_.train, samples_, learner_options,
                                             Rng(job_.seed(), self, RngPurpose::kBatch));
  eval_ws_ = model_->NewWorkspace();
  return InitAlgorithm();
}

// The topology and the engine, from the initial model or the checkpoint.
Status GossipJobImpl::InitAlgorithm() {
  const NodeId self = env_.self();
  auto topology = MakeJobTopology(job_, self);
  if (!topology.ok()) return topology.status();
  topology_ = std::move(topology).value();

  ParamVector x0(model_->layout());
  Rng init(job_.seed(), 0, RngPurpose::kInit);
  model_->InitParams(x0, init);
  auto ckpt = LoadCheckpoint(checkpoint_path_, x0.size());
  if (!ckpt.ok() && ckpt.status().code() != StatusCode::kNotFound) return ckpt.status();
  // A checkpoint of round 0 holds the initial state: start afresh.
  const bool resume = ckpt.ok() && ckpt->round > 0;
  if (resume) {
    if (ckpt->algorithm != GossipStateTag(job_))
      return Status::FailedPrecondition("checkpoint '" + checkpoint_path_ + "' holds the state of a '" +
                                        ckpt->algorithm + "' job, this job runs '" + GossipStateTag(job_) +
                                        "'");
    start_round_ = std::min(ckpt->round, job_.rounds());
    ml::MlLearnerState ls;
    auto batches = ckpt->scalars.find("learner/batches");
    auto steps = ckpt->scalars.find("learner/steps");
    if (batches == ckpt->scalars.end() || steps == ckpt->scalars.end())
      return Status::DataLoss("checkpoint '" + checkpoint_path_ + "' has no learner state");
    ls.batches = static_cast<std::uint64_t>(batches->second);
    ls.steps = static_cast<std::uint64_t>(steps->second);
    if (auto v = ckpt->vectors.find("learner/velocity"); v != ckpt->vectors.end()) ls.velocity = v->second;
    MURMUR_RETURN_IF_ERROR(learner_->RestoreState(ls));
  }
  GossipAlgorithmInputs in;
  in.env = &env_;
  in.topology = topology_.rounds.get();
  in.learner = learner_.get();
  in.observer = this;
  in.first_round = start_round_;
  in.peer_alive = peer_alive_;
  MURMUR_ASSIGN_OR_RETURN(node_, MakeGossipAlgorithm(job_, std::move(x0), std::move(in)));
  if (resume) {
    gossip::NodeState state;
    state.vectors = std::move(ckpt->vectors);
    state.scalars = std::move(ckpt->scalars);
    Status st = node_->ImportState(state);
    if (!st.ok()) return st.WithContext("checkpoint '" + checkpoint_path_ + "'");
    if (start_round_ < job_.rounds()) {
      MURMUR_LOG(kInfo) << "node " << self << ": job " << job_.job_id() << " resumes after round "
                        << start_round_;
    } else {
      MURMUR_LOG(kInfo) << "node " << self << ": job " << job_.job_id()
                        << " is complete (checkpoint of round " << start_round_ << ")";
    }
  }
  rounds_done_ = start_round_;
  next_mix_ = start_round_;
  Snapshot(start_round_);
  return Status::Ok();
}

void GossipJobImpl::Snapshot(std::uint64_t done) {
  Checkpoint c;
  c.round = done;
  const auto p = node_->params().span();
  c.params.assign(p.begin(), p.end());
  c.algorithm = GossipStateTag(job_);
  auto exported = node_->ExportState();
  // ValidateGossipJob refuses the codecs whose state cannot be exported.
  MURMUR_CHECK_MSG(exported.ok(), exported.status().ToString());
  gossip::NodeState state = std::move(exported).value();
  c.vectors = std::move(state.vectors);
  c.scalars = std::move(state.scalars);
  ml::MlLearnerState ls = learner_->ExportState();
  c.scalars["learner/batches"] = static_cast<double>(ls.batches);
  c.scalars["learner/steps"] = static_cast<double>(ls.steps);
  if (!ls.velocity.empty()) c.vectors["learner/velocity"] = std::move(ls.velocity);
  std::lock_guard<std::mutex> lock(mu_);
  last_ = std::move(c);
}

void GossipJobImpl::OnRoundDone(NodeId, std::uint64_t round, double loss) {
  // node_->round() is the next round to run: round + 1, or later after a catch-up.
  const std::uint64_t done = std::max(round + 1, node_->round());
  // Every round is mixed at most once (docs/security.md "Fault injection"):
  // the debug line lets a test check it from the log, the counter from /metrics.
  MURMUR_LOG(kDebug) << "node " << env_.self() << ": job " << job_.job_id() << " mixed round " << round;
  if (round < next_mix_) ++mixed_twice_;
  skipped_ += done - (round + 1);
  next_mix_ = std::max(next_mix_, done);
  Snapshot(done);
  rounds_done_ = done;
  loss_ = loss;
  if (job_.eval_every() > 0 && (done % job_.eval_every() == 0 || done == job_.rounds())) {
    accuracy_ = model_->Evaluate(node_->params(), data_.test, *eval_ws_).accuracy;
    MURMUR_LOG(kInfo) << "node " << env_.self() << ": job " << job_.job_id() << " round " << done << "/"
                      << job_.rounds() << " loss " << loss << " test accuracy " << accuracy_.load();
  }
  if (done % job_.checkpoint_every() == 0 || done >= job_.rounds() || draining_) WriteCheckpoint();
  if (done >= job_.rounds()) {
    End(Job::End::kCompleted);
  } else if (draining_) {
    End(Job::End::kDrained);
  }
}

void GossipJobImpl::WriteCheckpoint() {
  Status st;
  {
    std::lock_guard<std::mutex> lock(mu_);
    st = SaveCheckpoint(checkpoint_path_, last_);
  }
  if (!st.ok()) {
    MURMUR_LOG(kError) << "checkpoint: " << st.ToString();
    return;
  }
  ++checkpoints_;
}

GossipJob::GossipJob(std::unique_ptr<GossipJobImpl> impl) : impl_(std::move(impl)) {}
GossipJob::~GossipJob() = default;

Result<std::unique_ptr<Job>> GossipJob::Create(const proto::JobConfig& job, Env& env,
                                               std::string checkpoint_path, OnEnd on_end,
                                               std::function<bool(NodeId)> peer_alive,
                                               const LocalData& local) {
  auto impl = std::make_unique<GossipJobImpl>(job, env, std::move(checkpoint_path), std::move(on_end), local);
  impl->peer_alive_ = std::move(peer_alive);
  MURMUR_RETURN_IF_ERROR(impl->Init());
  return std::unique_ptr<Job>(new GossipJob(std::move(impl)));
}

MessageSink* GossipJob::sink() { return impl_->node_->sink(); }

void GossipJob::PeersChanged() {
  if (!impl_->ended_) impl_->node_->PeersChanged();
}

std::vector<NodeId> GossipJob::neighbours() const { return impl_->topology_.neighbours; }

void GossipJob::Start() {
  if (impl_->start_round_ >= impl_->job_.rounds()) return impl_->End(End::kCompleted);
  impl_->node_->Start();
}

void GossipJob::Drain() { impl_->draining_ = true; }

void GossipJob::Abandon() {
  if (impl_->ended_) return;
  impl_->WriteCheckpoint();
  impl_->End(End::kAbandoned);
}

const proto::JobConfig& GossipJob::config() const { return impl_->job_; }
bool GossipJob::ended() const { return impl_->ended_; }
std::uint64_t GossipJob::rounds_done() const { return impl_->rounds_done_; }
double GossipJob::accuracy() const { return impl_->accuracy_; }
double GossipJob::loss() const { return impl_->loss_; }
std::uint64_t GossipJob::checkpoints() const { return impl_->checkpoints_; }
std::uint64_t GossipJob::rounds_mixed_twice() const { return impl_->mixed_twice_; }
std::uint64_t GossipJob::rounds_skipped() const { return impl_->skipped_; }
std::vector<std::uint64_t> GossipJob::peer_draws() const { return impl_->node_->peer_draws(); }
std::vector<float> GossipJob::params() const {
  std::lock_guard<std::mutex> lock(impl_->mu_);
  return impl_->last_.params;
}

}  // namespace murmur::node
