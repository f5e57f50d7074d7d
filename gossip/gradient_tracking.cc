#include "gossip/gradient_tracking.h"

#include <algorithm>

#include "core/check.h"

namespace murmur::gossip {

GradientTrackingNode::GradientTrackingNode(Env& env, RoundTopology& topology, LocalLearner& learner,
                                           ParamVector x0, std::unique_ptr<Codec> codec,
                                           GradientTrackingOptions options, RoundObserver* observer)
    : env_(env),
      topology_(topology),
      learner_(learner),
      codec_(std::move(codec)),
      options_(options),
      observer_(observer),
      x_(std::move(x0)) {
  MURMUR_CHECK_MSG(codec_->full_model_safe(),
                   "gradient tracking sends whole vectors: use none, fp16, bf16 or int8");
  y_ = ParamVector(x_.layout());
  g_old_ = ParamVector(x_.layout());
  g_new_ = ParamVector(x_.layout());
  half_ = ParamVector(x_.layout());
  acc_x_ = ParamVector(x_.layout());
  acc_y_ = ParamVector(x_.layout());
  round_ = options_.first_round;
  if (round_ > 0) inbox_.Close(round_ - 1);  // earlier rounds are over
}

Result<NodeState> GradientTrackingNode::ExportState() const {
  NodeState s;
  MURMUR_RETURN_IF_ERROR(codec_->ExportState(s));
  s.Put("x", x_);
  s.Put("y", y_);
  s.Put("g", g_old_);
  return s;
}

Status GradientTrackingNode::ImportState(const NodeState& state) {
  MURMUR_RETURN_IF_ERROR(state.Get("x", x_));
  MURMUR_RETURN_IF_ERROR(state.Get("y", y_));
  MURMUR_RETURN_IF_ERROR(state.Get("g", g_old_));
  MURMUR_RETURN_IF_ERROR(codec_->ImportState(state));
  ready_ = true;
  return Status::Ok();
}

void GradientTrackingNode::Start() {
  if (ready_) return BeginRound();  // restored: y and g are already there
  // y_0 = g(x_0).
  env_.Offload(
      learner_.FlopsPerStep(), [this] { loss_ = learner_.Gradient(x_, g_old_); },
      [this] {
        y_.CopyFrom(g_old_);
        ready_ = true;
        BeginRound();
      });
}

void GradientTrackingNode::BeginRound() {
  if (finished()) return;
  sent_ = false;
  const float eta = static_cast<float>(learner_.LearningRate(round_));
  half_.vec() = x_.vec() - eta * y_.vec();
  auto mx = std::make_shared<const GossipMessage>(Channel::kModel, round_, 0.0,
                                                  codec_->Compress(half_.span(), round_));
  auto my = std::make_shared<const GossipMessage>(Channel::kTracker, round_, 0.0,
                                                  codec_->Compress(y_.span(), round_));
  const NodeId self = env_.self();
  for (const auto& e : topology_.Out(round_).Row(self)) {
    if (e.col == self) continue;
    env_.Send(e.col, mx);
    env_.Send(e.col, my);
  }
  sent_ = true;
  const std::uint64_t r = round_;
  timeout_ = env_.StartTimer(options_.round_timeout, [this, r] {
    timeout_ = 0;
    if (round_ == r && sent_) Combine();
  });
  MaybeCombine();
}

void GradientTrackingNode::OnMessage(NodeId from, MessagePtr msg) {
  if (msg->kind() != kGossipMessageKind) return;
  auto m = std::static_pointer_cast<const GossipMessage>(msg);
  if (m->channel() != Channel::kModel && m->channel() != Channel::kTracker) return;
  if (m->round() < inbox_.closed_below() || m->update().size() != x_.size()) return;
  if (topology_.In(m->round()).At(env_.self(), from) <= 0) return;
  if (inbox_.Has(m->round(), m->channel(), from)) return;
  inbox_.Add(from, std::move(m));
  MaybeCombine();
}

void GradientTrackingNode::MaybeCombine() {
  if (finished() || !sent_) return;
  std::size_t expected = topology_.In(round_).Row(env_.self()).size() - 1;
  if (inbox_.Count(round_, Channel::kModel) >= expected &&
      inbox_.Count(round_, Channel::kTracker) >= expected) {
    Combine();
  }
}

void GradientTrackingNode::Combine() {
  if (timeout_ != 0) {
    env_.CancelTimer(timeout_);
    timeout_ = 0;
  }
  sent_ = false;
  const NodeId self = env_.self();
  const auto& w = topology_.In(round_);
  std::vector<Received> got = inbox_.Close(round_);
  std::sort(got.begin(), got.end(), [](const Received& a, const Received& b) {
    return a.from != b.from ? a.from < b.from : a.msg->channel() < b.msg->channel();
  });
  acc_x_.SetZero();
  acc_y_.SetZero();
  double got_x = 0, got_y = 0;
  for (const Received& r : got) {
    double wij = w.At(self, r.from);
    bool is_x = r.msg->channel() == Channel::kModel;
    Status st = r.msg->update().AddTo((is_x ? acc_x_ : acc_y_).span(), static_cast<float>(wij));
    MURMUR_CHECK_MSG(st.ok(), st.ToString());
    (is_x ? got_x : got_y) += wij;
  }
  // Weight of missing neighbours falls back on the node's own vectors.
  acc_x_.vec() += static_cast<float>(1.0 - got_x) * half_.vec();
  acc_y_.vec() += static_cast<float>(1.0 - got_y) * y_.vec();
  std::swap(x_, acc_x_);
  env_.Offload(
      learner_.FlopsPerStep(), [this] { loss_ = learner_.Gradient(x_, g_new_); },
      [this] {
        y_.vec() = acc_y_.vec() + g_new_.vec() - g_old_.vec();
        std::swap(g_old_, g_new_);
        const std::uint64_t done = round_++;
        if (observer_ != nullptr) observer_->OnRoundDone(env_.self(), done, loss_);
        BeginRound();
      });
}

}  // namespace murmur::gossip
