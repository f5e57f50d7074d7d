#include "node/job/gossip_job.h"

#include <algorithm>
#include <limits>

#include "core/check.h"
#include "core/log.h"
#include "engine/gossip_builder.h"
#include "engine/node_kit.h"
#include "engine/topology.h"
#include "ml/ml_learner.h"
#include "node/job/checkpoint.h"
#include "node/job/job_data.h"
#include "node/job/job_env.h"
#include "node/job/job_peer_sampler.h"
#include "node/job/job_store.h"

namespace murmur::node {

namespace {

// "ALGORITHM COMPRESSION" (and " overlap" for an overlapped all-reduce,
// whose state adds the anchor): what a checkpoint records, so that a job
// never resumes from another algorithm's state.
std::string GossipStateTag(const engine::JobPlan& plan) {
  const proto::JobSpec& spec = plan.spec();
  return spec.algorithm() + " " + plan.gossip().compression + (spec.overlap() ? " overlap" : "");
}

}  // namespace

class GossipJobImpl final : public RoundObserver {
 public:
  GossipJobImpl(const PlannedJob& job, Env& env, std::string checkpoint_path, Job::OnEnd on_end,
                LocalData local)
      : job_(job.config()),
        spec_(job_.spec()),
        plan_(job.plan()),
        local_(std::move(local)),
        env_(env, spec_.seed(), JobTag(job_)),
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
  const proto::JobSpec& spec_;  // job_.spec()
  const engine::JobPlan plan_;  // of job_
  LocalData local_;
  JobEnv env_;
  std::string checkpoint_path_;
  Job::OnEnd on_end_;
  ml::TrainTest data_;
  std::unique_ptr<ml::Model> model_;
  std::vector<ml::SampleIndex> samples_;  // this node's: all of data_.train
  std::unique_ptr<ml::MlLearner> learner_;
  engine::GraphTopology topology_;  // gossip learning: none (peers from the sampler)
  std::vector<NodeId> neighbours_;
  std::unique_ptr<JobPeerSampler> sampler_;  // gossip learning
  std::unique_ptr<gossip::Node> node_;
  std::unique_ptr<ml::ModelWorkspace> eval_ws_;
  std::uint64_t start_round_ = 0;
  std::atomic<std::uint64_t> rounds_done_{0};
  std::atomic<double> accuracy_{-1};
  std::atomic<double> loss_{std::numeric_limits<double>::quiet_NaN()};  // NaN: no round yet
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
  MURMUR_ASSIGN_OR_RETURN(JobData loaded, LoadJobData(job_, local_, spec_.nodes(), self));
  data_ = std::move(loaded.data);
  samples_ = std::move(loaded.samples);
  model_ = std::move(loaded.model);
  learner_ = engine::MakeLearner(plan_, *model_, data_.train, samples_, self);
  eval_ws_ = model_->NewWorkspace();
  return InitAlgorithm();
}

// The topology and the engine, from the initial model or the checkpoint.
Status GossipJobImpl::InitAlgorithm() {
  const NodeId self = env_.self();
  MURMUR_ASSIGN_OR_RETURN(engine::NodePeers peers, engine::PeersOf(plan_, self));
  topology_ = std::move(peers.topology);
  neighbours_ = std::move(peers.neighbours);
  if (plan_.algorithm() == engine::Algorithm::kGossipLearning)  // membership's view filters the candidates
    sampler_ =
        std::make_unique<JobPeerSampler>(env_, spec_.nodes(), std::move(peers.candidates), peer_alive_);

  ParamVector x0 = engine::InitialModel(plan_, *model_);
  auto ckpt = LoadCheckpoint(checkpoint_path_, x0.size());
  if (!ckpt.ok() && ckpt.status().code() != StatusCode::kNotFound) return ckpt.status();
  // A checkpoint of round 0 holds the initial state: start afresh.
  const bool resume = ckpt.ok() && ckpt->round > 0;
  if (resume) {
    if (ckpt->algorithm != GossipStateTag(plan_))
      return Status::FailedPrecondition("checkpoint '" + checkpoint_path_ + "' holds the state of a '" +
                                        ckpt->algorithm + "' job, this job runs '" + GossipStateTag(plan_) +
                                        "'");
    MURMUR_RETURN_IF_ERROR(CheckCheckpointOwner(*ckpt, checkpoint_path_, job_.job_id(), OwnerTag(job_)));
    start_round_ = std::min(ckpt->round, spec_.rounds());
    ml::MlLearnerState ls;
    auto batches = ckpt->scalars.find("learner/batches");
    auto steps = ckpt->scalars.find("learner/steps");
    if (batches == ckpt->scalars.end() || steps == ckpt->scalars.end())
      return Status::DataLoss("checkpoint '" + checkpoint_path_ + "' has no learner state");
    ls.batches = static_cast<std::uint64_t>(batches->second);
    ls.steps = static_cast<std::uint64_t>(steps->second);
    for (auto [name, into] :
         {std::pair{"learner/velocity", &ls.velocity}, std::pair{"learner/adam_m", &ls.adam_m},
          std::pair{"learner/adam_v", &ls.adam_v}})
      if (auto v = ckpt->vectors.find(name); v != ckpt->vectors.end()) *into = v->second;
    MURMUR_RETURN_IF_ERROR(learner_->RestoreState(ls));
  }
  engine::GossipHost host;
  host.env = &env_;
  host.topology = topology_.rounds.get();
  host.learner = learner_.get();
  host.observer = this;
  host.nodes = spec_.nodes();
  host.first_round = start_round_;
  host.catch_up = true;  // on static topologies: a restarted daemon rejoins its neighbours
  host.peer_alive = peer_alive_;
  host.peers = sampler_.get();
  host.bound_by_wakeups = true;
  host.concurrent_training = true;  // AsioEnv trains on a worker thread
  MURMUR_ASSIGN_OR_RETURN(node_, engine::MakeGossipNode(plan_, std::move(x0), host));
  if (resume) {
    gossip::NodeState state;
    state.vectors = std::move(ckpt->vectors);
    state.scalars = std::move(ckpt->scalars);
    state.wide = std::move(ckpt->wide);
    Status st = node_->ImportState(state);
    if (!st.ok()) return st.WithContext("checkpoint '" + checkpoint_path_ + "'");
    if (start_round_ < spec_.rounds()) {
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
  c.algorithm = GossipStateTag(plan_);
  c.job_id = job_.job_id();
  c.job_tag = OwnerTag(job_);
  auto exported = node_->ExportState();
  // ValidateGossipJob refuses the codecs whose state cannot be exported.
  MURMUR_CHECK_MSG(exported.ok(), exported.status().ToString());
  gossip::NodeState state = std::move(exported).value();
  c.vectors = std::move(state.vectors);
  c.scalars = std::move(state.scalars);
  c.wide = std::move(state.wide);
  ml::MlLearnerState ls = learner_->ExportState();
  c.scalars["learner/batches"] = static_cast<double>(ls.batches);
  c.scalars["learner/steps"] = static_cast<double>(ls.steps);
  if (!ls.velocity.empty()) c.vectors["learner/velocity"] = std::move(ls.velocity);
  if (!ls.adam_m.empty()) {
    c.vectors["learner/adam_m"] = std::move(ls.adam_m);
    c.vectors["learner/adam_v"] = std::move(ls.adam_v);
  }
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
  if ((spec_.eval_every() > 0 && done % spec_.eval_every() == 0) || done >= spec_.rounds()) {
    accuracy_ = model_->Evaluate(node_->params(), data_.test, *eval_ws_).accuracy;
    MURMUR_LOG(kInfo) << "node " << env_.self() << ": job " << job_.job_id() << " round " << done << "/"
                      << spec_.rounds() << " loss " << loss << " test accuracy " << accuracy_.load();
  }
  if (done % job_.checkpoint_every() == 0 || done >= spec_.rounds() || draining_) WriteCheckpoint();
  if (done >= spec_.rounds()) {
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

Result<std::unique_ptr<Job>> GossipJob::Create(const PlannedJob& job, Env& env, std::string checkpoint_path,
                                               OnEnd on_end, std::function<bool(NodeId)> peer_alive,
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

std::vector<NodeId> GossipJob::neighbours() const { return impl_->neighbours_; }

void GossipJob::Start() {
  if (impl_->start_round_ >= impl_->spec_.rounds()) return impl_->End(End::kCompleted);
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
std::vector<NodeId> GossipJob::waiting_for() const {
  return impl_->node_ ? impl_->node_->WaitingFor() : std::vector<NodeId>{};
}
std::vector<std::uint64_t> GossipJob::peer_draws() const {
  return impl_->sampler_ ? impl_->sampler_->draws() : std::vector<std::uint64_t>{};
}
std::vector<float> GossipJob::params() const {
  std::lock_guard<std::mutex> lock(impl_->mu_);
  return impl_->last_.params;
}

}  // namespace murmur::node
