#include "node/gossip_job.h"

#include <algorithm>
#include <set>

#include "core/log.h"
#include "gossip/decentralized_sgd.h"
#include "ml/dataset_spec.h"
#include "ml/ml_learner.h"
#include "node/checkpoint.h"
#include "node/job_data.h"
#include "node/job_env.h"
#include "topology/factory.h"

namespace murmur::node {

namespace {
Nanos Seconds(double s) { return Nanos(static_cast<std::int64_t>(s * 1e9)); }
}  // namespace

Status ValidateGossipJob(const proto::JobConfig& j, NodeId self) {
  (void)self;
  MURMUR_RETURN_IF_ERROR(ml::CheckPartitionSpec(j.partition()).WithContext("job field 'partition'"));
  if (j.rounds() == 0 || j.batch() == 0 || j.local_steps() == 0 || j.checkpoint_every() == 0)
    return Status::InvalidArgument(
        "job fields rounds, batch, local_steps and checkpoint_every must be positive");
  if (!(j.lr() > 0) || !(j.round_timeout() > 0))
    return Status::InvalidArgument("job fields lr and round_timeout must be positive");
  return Status::Ok();
}

class GossipJobImpl final : public gossip::RoundObserver {
 public:
  GossipJobImpl(proto::JobConfig job, Env& env, std::string checkpoint_path, Job::OnEnd on_end,
                LocalData local)
      : job_(std::move(job)),
        local_(std::move(local)),
        env_(env, job_.seed()),
        checkpoint_path_(std::move(checkpoint_path)),
        on_end_(std::move(on_end)) {}

  Status Init();
  void OnRoundDone(NodeId, std::uint64_t round, double loss) override;
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
  std::unique_ptr<gossip::RoundTopology> topology_;
  std::unique_ptr<gossip::DecentralizedSgdNode> node_;
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
  std::vector<float> last_params_;  // guarded by mu_: the model after round rounds_done_
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
  learner_ = std::make_unique<ml::MlLearner>(*model_, data_.train, samples_, learner_options,
                                             Rng(job_.seed(), self, RngPurpose::kBatch));
  eval_ws_ = model_->NewWorkspace();

  // Topology: the same spec as the simulator's (static kinds).
  topology::TopologySpec spec;
  spec.kind = job_.topology();
  spec.nodes = job_.nodes();
  spec.seed = job_.seed();
  auto schedule = topology::MakeSchedule(spec);
  if (!schedule.ok()) return schedule.status().WithContext("job field 'topology'");
  if ((*schedule)->period() != 1)
    return Status::InvalidArgument("job field 'topology': murmurd runs static topologies only");
  topology_ = std::make_unique<gossip::RoundTopology>((*schedule)->At(0));
  auto codec_spec = gossip::CodecSpec::Parse(job_.compression());
  if (!codec_spec.ok()) return codec_spec.status().WithContext("job field 'compression'");
  if (!codec_spec->full_model_safe)
    return Status::InvalidArgument(
        "job field 'compression': murmurd runs full-model codecs (none, fp16, bf16, int8)");

  // Initial model, or the checkpoint.
  ParamVector x0(model_->layout());
  Rng init(job_.seed(), 0, RngPurpose::kInit);
  model_->InitParams(x0, init);
  auto ckpt = LoadCheckpoint(checkpoint_path_, x0.size());
  if (ckpt.ok()) {
    start_round_ = std::min(ckpt->round, job_.rounds());
    std::copy(ckpt->params.begin(), ckpt->params.end(), x0.data());
    MURMUR_LOG(kInfo) << "node " << self << ": job " << job_.job_id() << " resumes after round "
                      << start_round_;
  } else if (ckpt.status().code() != StatusCode::kNotFound) {
    return ckpt.status();
  }
  rounds_done_ = start_round_;
  next_mix_ = start_round_;
  last_params_.assign(x0.span().begin(), x0.span().end());

  gossip::DecentralizedSgdOptions o;
  o.order = job_.algorithm() == "dpsgd-cta" ? gossip::MixOrder::kCombineThenAdapt
                                            : gossip::MixOrder::kAdaptThenCombine;
  o.rounds = job_.rounds();
  o.first_round = start_round_;
  o.catch_up = true;
  o.peer_alive = peer_alive_;
  o.local_steps = static_cast<int>(job_.local_steps());
  o.round_timeout = Seconds(job_.round_timeout());
  auto codec = std::make_unique<gossip::Codec>(*codec_spec, self, model_->layout(),
                                               Rng(job_.seed(), self, RngPurpose::kCompression));
  node_ = std::make_unique<gossip::DecentralizedSgdNode>(env_, *topology_, *learner_, std::move(x0),
                                                         std::move(codec), o, this);
  return Status::Ok();
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
  {
    std::lock_guard<std::mutex> lock(mu_);
    const auto p = node_->params().span();
    last_params_.assign(p.begin(), p.end());
  }
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
  Checkpoint c;
  {
    std::lock_guard<std::mutex> lock(mu_);
    c.params = last_params_;
  }
  c.round = rounds_done_;
  Status st = SaveCheckpoint(checkpoint_path_, c);
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

MessageSink* GossipJob::sink() { return impl_->node_.get(); }

void GossipJob::PeersChanged() {
  if (!impl_->ended_) impl_->node_->PeersChanged();
}

std::vector<NodeId> GossipJob::neighbours() const {
  std::set<NodeId> out;
  const NodeId self = impl_->env_.self();
  for (const auto& e : impl_->topology_->In(0).Row(self))
    if (e.col != self) out.insert(e.col);
  for (const auto& e : impl_->topology_->Out(0).Row(self))
    if (e.col != self) out.insert(e.col);
  return {out.begin(), out.end()};
}

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
std::vector<float> GossipJob::params() const {
  std::lock_guard<std::mutex> lock(impl_->mu_);
  return impl_->last_params_;
}

}  // namespace murmur::node
