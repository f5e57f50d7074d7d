// AsioEnv: core::Env for a daemon, over an asio::io_context and a Transport.
//
// The io_context is the node's one executor: timers are asio::steady_timers
// on it, the Transport delivers messages on it, and Offload runs `work` on a
// small asio::thread_pool and posts `done` back to it. Now() is the steady
// clock since the AsioEnv was made. MakeRng gives the stream (seed, self,
// purpose), the same one the simulator gives that node.
//
// Send encodes the message (Message::EncodeTo) once and queues the bytes on
// the Transport with the message's kind; on the other side the payload is
// decoded by the decoder registered for its kind (core/message_decoder.h:
// the daemon registers its jobs' kinds, node/job/decoders.h, and membership's)
// and handed to the sink. AsioEnv itself knows no protocol. A payload of an unknown kind
// or one that fails to decode is counted, dropped, and reported to the
// Transport as an invalid update from its sender
// (Transport::ReportMisbehaviour), which graylists a persistent offender.
//
// Thread-safety: as core::Env: call it from the io_context's thread only.
// The io_context, the Transport and the sink must outlive the AsioEnv;
// destroy it after the io_context has stopped (the pool is joined then).
#pragma once

#include <array>
#include <atomic>
#include <functional>
#include <map>
#include <memory>

#include "core/env.h"
#include "core/message_decoder.h"
#include "node/transport/asio.h"
#include "node/transport/transport.h"

namespace murmur::node {

class AsioEnv final : public Env {
 public:
  // `offload_threads` worker threads run Offload's work (at least 1).
  AsioEnv(asio::io_context& io, NodeId self, std::uint64_t seed, int offload_threads = 1);
  ~AsioEnv() override;

  // Where messages from the Transport go. Call before they arrive.
  void SetSink(MessageSink* sink) { sink_ = sink; }
  void SetTransport(Transport* transport) { transport_ = transport; }
  // Decoder for payloads of `kind` (replaces an earlier one).
  void RegisterDecoder(std::uint32_t kind, MessageDecoder decoder) { decoders_[kind] = std::move(decoder); }
  void RegisterDecoders(const DecoderTable& table) {
    for (const auto& [kind, decoder] : table) decoders_[kind] = decoder;
  }
  // What the Transport's handler should call: decodes and delivers.
  void OnTransportMessage(NodeId from, ReceivedMessage message);

  NodeId self() const override { return self_; }
  Nanos Now() const override;
  TimerId StartTimer(Nanos delay, std::function<void()> fn) override;
  void CancelTimer(TimerId id) override;
  void Send(NodeId to, MessagePtr msg) override;
  Rng MakeRng(RngPurpose purpose) const override { return Rng(seed_, self_, purpose); }
  void Offload(double flops, std::function<void()> work, std::function<void()> done) override;
  // Counts the refusal, logs it and books it against `from` (Offence::kRefusedUpdate).
  void Refuse(NodeId from, Refusal why) override;

  std::uint64_t undecodable() const { return undecodable_; }
  // Messages refused for `why` since the start.
  std::uint64_t refused(Refusal why) const { return refused_[static_cast<std::size_t>(why)]; }
  std::size_t pending_timers() const { return timers_.size(); }

 private:
  asio::io_context& io_;
  NodeId self_;
  std::uint64_t seed_;
  std::chrono::steady_clock::time_point start_;
  asio::thread_pool pool_;
  Transport* transport_ = nullptr;
  MessageSink* sink_ = nullptr;
  DecoderTable decoders_;
  std::map<TimerId, std::unique_ptr<asio::steady_timer>> timers_;
  TimerId next_timer_ = 1;
  std::atomic<std::uint64_t> undecodable_{0};
  std::array<std::atomic<std::uint64_t>, kRefusalKinds> refused_{};
};

}  // namespace murmur::node
