// A small SecAgg+ network for tests: n clients (nodes 0 .. n-1) and a server
// (node n), each on its own ManualEnv. Pump() carries messages until the
// network is quiet; every message travels as bytes (EncodeTo, then Decode),
// so the protocol runs over its wire encoding. A test may tamper with the
// server's messages to a client (a malicious server) and choose clients that
// go silent after sharing their keys (dropouts).
#pragma once

#include <doctest/doctest.h>

#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <vector>

#include "core/manual_env.h"
#include "crypto/identity.h"
#include "federated/secagg_client.h"
#include "federated/secagg_server.h"

namespace murmur::federated::testing {

struct SecAggNet {
  using Tamper =
      std::function<std::shared_ptr<const SecAggMessage>(NodeId to, std::shared_ptr<const SecAggMessage>)>;

  SecAggNet(NodeId num_clients, SecAggParams p, std::size_t len, std::set<NodeId> silent = {},
            std::uint64_t seed = 1)
      : n(num_clients), params(p), length(len) {
    for (NodeId i = 0; i <= n; ++i) {
      envs.push_back(std::make_unique<ManualEnv>(i, seed));
      std::array<std::uint8_t, 32> s{};
      s[0] = static_cast<std::uint8_t>(i);
      s[1] = static_cast<std::uint8_t>(i >> 8);
      s[2] = static_cast<std::uint8_t>(seed);
      identities.push_back(crypto::Identity::FromSeed(s));
    }
    directory = [this](NodeId id) -> const crypto::SignPublicKey* {
      return id < this->n ? &identities[id].public_key() : nullptr;
    };
    for (NodeId i = 0; i < n; ++i) {
      SecAggClientOptions co;
      co.params = p;
      co.identity = &identities[i];
      co.directory = directory;
      co.deterministic_secrets = true;
      co.silent_after_share_keys = silent.count(i) > 0;
      clients.push_back(std::make_unique<SecAggClient>(*envs[i], n, kRound, co));
    }
    SecAggServerOptions so;
    so.params = p;
    so.length = len;
    so.key_timeout = std::chrono::seconds(1);
    so.input_timeout = std::chrono::seconds(10);
    so.directory = directory;
    so.deterministic_seed = true;
    std::vector<NodeId> selected;
    for (NodeId i = 0; i < n; ++i) selected.push_back(i);
    server = std::make_unique<SecAggServer>(*envs[n], kRound, selected, so,
                                            [this](SecAggOutcome o) { outcome = std::move(o); });
  }

  // Sends the message as bytes and returns what the receiver decodes.
  static std::shared_ptr<const SecAggMessage> OverTheWire(const MessagePtr& msg) {
    REQUIRE(msg->kind() == kSecAggMessageKind);
    std::vector<std::uint8_t> bytes;
    msg->EncodeTo(bytes);
    REQUIRE(bytes.size() == msg->EncodedSize());
    auto back = SecAggMessage::Decode(bytes);
    REQUIRE(back.ok());
    std::vector<std::uint8_t> again;
    (*back)->EncodeTo(again);
    REQUIRE(again == bytes);
    return *back;
  }

  // Delivers everything in the outboxes until nothing moves; then lets the
  // server's stage timers fire (silent clients) and goes on, up to a bound.
  void Run(const std::vector<std::vector<double>>& inputs) {
    for (NodeId i = 0; i < n; ++i) clients[i]->Start();
    server->Start();
    for (NodeId i = 0; i < n; ++i) clients[i]->SetInput(inputs[i]);
    for (int spin = 0; spin < 100 && !outcome; ++spin) {
      bool moved = true;
      while (moved) {
        moved = false;
        for (NodeId from = 0; from <= n; ++from) {
          auto sent = std::move(envs[from]->outbox());
          envs[from]->outbox().clear();
          for (auto& s : sent) {
            moved = true;
            ++messages;
            bytes += s.msg->EncodedSize();
            auto m = OverTheWire(s.msg);
            if (s.to == n) {
              server->OnMessage(from, *m);
            } else {
              if (tamper) m = tamper(s.to, m);
              if (m) clients[s.to]->OnMessage(from, *m);
            }
          }
        }
      }
      if (!outcome) envs[n]->AdvanceBy(std::chrono::seconds(1));
    }
  }

  static constexpr std::uint64_t kRound = 42;
  NodeId n;
  SecAggParams params;
  std::size_t length;
  std::vector<std::unique_ptr<ManualEnv>> envs;
  std::vector<crypto::Identity> identities;
  SignKeyDirectory directory;
  std::vector<std::unique_ptr<SecAggClient>> clients;
  std::unique_ptr<SecAggServer> server;
  std::optional<SecAggOutcome> outcome;
  Tamper tamper;
  std::size_t messages = 0, bytes = 0;
};

}  // namespace murmur::federated::testing
