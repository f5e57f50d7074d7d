#include "node/transport/asio_env.h"

#include <algorithm>

#include "core/log.h"

namespace murmur::node {

AsioEnv::AsioEnv(asio::io_context& io, NodeId self, std::uint64_t seed, int offload_threads)
    : io_(io),
      self_(self),
      seed_(seed),
      start_(std::chrono::steady_clock::now()),
      pool_(static_cast<std::size_t>(std::max(offload_threads, 1))) {}

AsioEnv::~AsioEnv() {
  pool_.join();
  for (auto& [id, timer] : timers_) timer->cancel();
}

Nanos AsioEnv::Now() const {
  return std::chrono::duration_cast<Nanos>(std::chrono::steady_clock::now() - start_);
}

TimerId AsioEnv::StartTimer(Nanos delay, std::function<void()> fn) {
  const TimerId id = next_timer_++;
  auto timer = std::make_unique<asio::steady_timer>(io_);
  timer->expires_after(std::max(delay, Nanos(0)));
  timer->async_wait([this, id, fn = std::move(fn)](const asio::error_code& ec) {
    if (ec) return;
    auto it = timers_.find(id);
    if (it == timers_.end()) return;
    // Keep the timer object alive until its handler returns.
    std::unique_ptr<asio::steady_timer> self = std::move(it->second);
    timers_.erase(it);
    fn();
  });
  timers_.emplace(id, std::move(timer));
  return id;
}

void AsioEnv::CancelTimer(TimerId id) {
  auto it = timers_.find(id);
  if (it == timers_.end()) return;
  // Destroying a waiting timer cancels it; its handler then runs with
  // operation_aborted and touches nothing.
  timers_.erase(it);
}

void AsioEnv::Send(NodeId to, MessagePtr msg) {
  if (transport_ == nullptr) return;
  auto bytes = std::make_shared<crypto::Bytes>();
  bytes->reserve(msg->EncodedSize());
  msg->EncodeTo(*bytes);
  transport_->Send(to, msg->kind(), std::move(bytes));
}

void AsioEnv::Offload(double flops, std::function<void()> work, std::function<void()> done) {
  (void)flops;
  asio::post(pool_, [this, work = std::move(work), done = std::move(done)]() mutable {
    work();
    asio::post(io_, std::move(done));
  });
}

void AsioEnv::Refuse(NodeId from, Refusal why) {
  ++refused_[static_cast<std::size_t>(why)];
  MURMUR_LOG(kWarning) << "node " << self_ << ": refused a message of node " << from << ": "
                       << RefusalName(why) << " (docs/security.md, Insiders)";
  if (transport_ != nullptr) transport_->ReportMisbehaviour(from, Offence::kRefusedUpdate);
}

void AsioEnv::OnTransportMessage(NodeId from, ReceivedMessage message) {
  auto it = decoders_.find(message.kind);
  if (it == decoders_.end()) {
    ++undecodable_;
    MURMUR_LOG(kWarning) << "node " << self_ << ": message of unknown kind " << message.kind << " from node "
                         << from;
    if (transport_ != nullptr) transport_->ReportMisbehaviour(from, Offence::kInvalidUpdate);
    return;
  }
  Result<MessagePtr> msg = it->second(message.payload.span());
  if (!msg.ok()) {
    ++undecodable_;
    MURMUR_LOG(kWarning) << "node " << self_ << ": undecodable message from node " << from << ": "
                         << msg.status().ToString();
    if (transport_ != nullptr) transport_->ReportMisbehaviour(from, Offence::kInvalidUpdate);
    return;
  }
  if (sink_ != nullptr) sink_->OnMessage(from, std::move(msg).value());
}

}  // namespace murmur::node
