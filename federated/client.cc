#include "federated/client.h"

#include <algorithm>
#include <cmath>

#include "core/check.h"
#include "federated/privacy.h"

namespace murmur::federated {

FedClient::FedClient(Env& env, NodeId server, LocalLearner& learner, const Layout& layout,
                     ClientOptions options)
    : env_(env),
      server_(server),
      learner_(learner),
      layout_(layout),
      options_(std::move(options)),
      rng_(env.MakeRng(RngPurpose::kCompression)),
      dropout_rng_(env.MakeRng(RngPurpose::kSecureAggregation).Fork(0xD0)),
      attack_rng_(env.MakeRng(RngPurpose::kAttack)) {
  state_.node = env.self();
  if (options_.local_buffers) local_ = LocalTensors(layout, kBufferTensorPrefix);
}

std::size_t FedClient::state_floats() const {
  return x_.size() + y_.size() + c_.size() + ci_.size() + state_.residual.size();
}

void FedClient::ReleaseModels() {
  local_.Save(y_);  // the values this client trained, for its next task (none kept: no-op)
  x_ = ParamVector();
  y_ = ParamVector();
  c_ = ParamVector();
}

int FedClient::TargetSteps() const {
  if (options_.local_steps > 0) return options_.local_steps;
  const double steps = std::ceil(options_.local_epochs * options_.num_samples / std::max(options_.batch, 1));
  return std::max(1, static_cast<int>(steps));
}

void FedClient::OnMessage(NodeId from, MessagePtr msg) {
  if (from != server_) return;
  if (msg->kind() == kSecAggMessageKind) {
    if (secagg_) secagg_->OnMessage(from, static_cast<const SecAggMessage&>(*msg));
    return;
  }
  if (msg->kind() != kFedMessageKind || busy_) return;
  auto m = std::static_pointer_cast<const FedMessage>(msg);
  const FedHeader& h = m->header();
  if (h.kind != FedKind::kTask || m->updates()[0]->size() != layout_.total_size()) return;
  const bool secure = options_.secagg.identity != nullptr;
  if (secure != ((h.flags & kFlagSecureAggregation) != 0)) return;  // no update in the clear
  if (options_.scaffold && m->updates().size() != 2) return;
  task_ = h;
  if (x_.empty()) {
    x_ = ParamVector(layout_);
    y_ = ParamVector(layout_);
  }
  x_.SetZero();
  if (!m->updates()[0]->AddTo(x_.span()).ok()) return;
  y_.CopyFrom(x_);
  if (trained_) local_.Restore(y_);
  if (options_.scaffold) {
    if (c_.empty()) c_ = ParamVector(x_.layout());
    c_.SetZero();
    if (!m->updates()[1]->AddTo(c_.span()).ok()) return;
    if (ci_.empty()) ci_.assign(x_.size(), 0.0f);
  }
  busy_ = true;
  target_ = TargetSteps();
  done_ = 0;
  loss_sum_ = 0;
  started_ = env_.Now();
  deadline_ = h.budget_ns > 0 ? started_ + Nanos(h.budget_ns) : Nanos::max();
  if (secure) {
    SecAggClientOptions so = options_.secagg;
    so.silent_after_share_keys =
        options_.secagg_dropout > 0 && dropout_rng_.Bernoulli(options_.secagg_dropout);
    secagg_ = std::make_unique<SecAggClient>(env_, server_, h.round, std::move(so));
    secagg_->Start();  // keys go out while the client trains
  }
  RunChunk();
}

void FedClient::Step(int steps) {
  if (options_.prox_mu == 0 && !options_.scaffold) {
    loss_sum_ += learner_.Train(y_, steps) * steps;
    return;
  }
  ParamVector g(y_.layout());
  const auto mu = static_cast<float>(options_.prox_mu);
  for (int k = 0; k < steps; ++k) {
    const auto lr = static_cast<float>(learner_.LearningRate(static_cast<std::uint64_t>(done_ + k)));
    loss_sum_ += learner_.Gradient(y_, g);
    if (mu > 0) g.vec() += mu * (y_.vec() - x_.vec());
    if (options_.scaffold) {
      Eigen::Map<const Eigen::VectorXf> ci(ci_.data(), static_cast<Eigen::Index>(ci_.size()));
      g.vec() += c_.vec() - ci;
    }
    y_.vec() -= lr * g.vec();
  }
}

void FedClient::RunChunk() {
  const int chunk = task_.budget_ns > 0 ? std::max(1, target_ / std::max(options_.chunks, 1)) : target_;
  const int steps = std::min(chunk, target_ - done_);
  env_.Offload(
      steps * learner_.FlopsPerStep(), [this, steps] { Step(steps); },
      [this, steps] {
        done_ += steps;
        if (done_ >= target_) return Finish();
        // Stop when the next chunk, at the pace so far, would end past the budget.
        const Nanos per_step = (env_.Now() - started_) / done_;
        const int next = std::min(steps, target_ - done_);
        if (env_.Now() + per_step * next > deadline_) return Finish();
        RunChunk();
      });
}

void FedClient::SendMaskedResult() {
  const std::size_t d = y_.size();
  const double w = options_.num_samples / options_.secagg_weight_scale;
  std::vector<double> v(d + 2);
  for (std::size_t j = 0; j < d; ++j) v[j] = w * (static_cast<double>(y_[j]) - static_cast<double>(x_[j]));
  v[d] = w;
  v[d + 1] = w * (done_ > 0 ? loss_sum_ / done_ : 0);
  ReleaseModels();
  secagg_->SetInput(v);
}

void FedClient::Finish() {
  busy_ = false;
  trained_ = true;
  ++tasks_done_;
  last_loss_ = done_ > 0 ? loss_sum_ / done_ : std::numeric_limits<double>::quiet_NaN();
  if (secagg_) return SendMaskedResult();
  FedHeader r;
  r.kind = FedKind::kResult;
  r.round = task_.round;
  r.weight = options_.num_samples;
  r.steps = static_cast<std::uint32_t>(done_);
  r.loss = done_ > 0 ? loss_sum_ / done_ : 0;
  std::vector<UpdatePtr> updates;
  std::vector<float> delta(y_.size());
  for (std::size_t j = 0; j < delta.size(); ++j) delta[j] = y_[j] - x_[j];
  const bool poisons = options_.attack == AttackKind::kSignFlip || options_.attack == AttackKind::kGaussian;
  const bool want_model =
      (task_.flags & kFlagWantModel) != 0 && options_.upload == nullptr && options_.dp_clip == 0 && !poisons;
  if (options_.scaffold) {
    // Option II: c_i+ - c_i = -c + (x - y) / (tau lr).
    const double lr = learner_.LearningRate(0);
    std::vector<float> dc(ci_.size());
    for (std::size_t j = 0; j < dc.size(); ++j) {
      dc[j] = static_cast<float>(-c_[j] - delta[j] / (done_ * lr));
      ci_[j] += dc[j];
    }
    updates.push_back(nullptr);
    updates.push_back(compression::DenseF32Update(dc));
  } else {
    updates.push_back(nullptr);
  }
  if (poisons) {  // after SCAFFOLD's control variate, which the simulator's attack leaves alone too
    const std::span<float> mine(delta);
    ApplyAttack(options_.attack, options_.attack_scale, std::span<const std::span<float>>(&mine, 1), {true},
                attack_rng_);
  }
  if (want_model) {
    r.flags = kFlagIsModel;
    updates[0] = compression::DenseF32Update(y_.span());
  } else {
    if (options_.dp_clip > 0) {
      ClipToNorm(delta, options_.dp_clip);
      AddGaussianNoise(std::span<float>(delta), options_.dp_noise_stddev, rng_);
    }
    updates[0] = options_.upload ? options_.upload->Compress(delta, y_.layout(), state_, rng_)
                                 : compression::DenseF32Update(delta);
  }
  ReleaseModels();
  env_.Send(server_, std::make_shared<const FedMessage>(r, std::move(updates)));
}

}  // namespace murmur::federated
