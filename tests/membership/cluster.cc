#include "tests/membership/cluster.h"

#include "core/check.h"

namespace murmur::membership::testing {

class Cluster::FaultEnv final : public Env {
 public:
  FaultEnv(Env& inner, const std::function<bool(NodeId, NodeId)>& blocked,
           std::vector<std::tuple<Nanos, NodeId, NodeId>>& other_sends)
      : inner_(inner), blocked_(blocked), other_sends_(other_sends) {}
  NodeId self() const override { return inner_.self(); }
  Nanos Now() const override { return inner_.Now(); }
  TimerId StartTimer(Nanos delay, std::function<void()> fn) override {
    return inner_.StartTimer(delay, std::move(fn));
  }
  void CancelTimer(TimerId id) override { inner_.CancelTimer(id); }
  void Send(NodeId to, MessagePtr msg) override {
    if (msg->kind() != kMembershipMessageKind) other_sends_.emplace_back(Now(), self(), to);
    if (blocked_ && blocked_(self(), to)) return;
    inner_.Send(to, std::move(msg));
  }
  Rng MakeRng(RngPurpose purpose) const override { return inner_.MakeRng(purpose); }

 private:
  Env& inner_;
  const std::function<bool(NodeId, NodeId)>& blocked_;
  std::vector<std::tuple<Nanos, NodeId, NodeId>>& other_sends_;
};

class Cluster::Sink final : public MessageSink {
 public:
  Sink(Env& env, Membership& m, const Nanos& delay, MessageSink* const& other)
      : env_(env), m_(m), delay_(delay), other_(other) {}
  void OnMessage(NodeId from, MessagePtr msg) override {
    if (msg->kind() != kMembershipMessageKind) {
      if (other_ != nullptr) other_->OnMessage(from, std::move(msg));
      return;
    }
    if (delay_ <= Nanos(0)) {
      m_.OnMessage(from, std::move(msg));
      return;
    }
    env_.StartTimer(delay_, [this, from, msg = std::move(msg)] { m_.OnMessage(from, msg); });
  }

 private:
  Env& env_;
  Membership& m_;
  const Nanos& delay_;
  MessageSink* const& other_;
};

class Cluster::Recorder final : public MembershipObserver {
 public:
  Recorder(Cluster& c, NodeId at) : c_(c), at_(at) {}
  void OnMemberAlive(const Member& m) override { Record(m); }
  void OnMemberSuspect(const Member& m) override { Record(m); }
  void OnMemberDead(const Member& m) override { Record(m); }

 private:
  void Record(const Member& m) { c_.events_.push_back({c_.sim_.now(), at_, m.id, m.state}); }
  Cluster& c_;
  NodeId at_;
};

Cluster::Cluster(NodeId n, MembershipOptions options, double loss, std::uint64_t seed)
    : sim_(
          [&] {
            sim::SimulatorOptions o;
            o.seed = seed;
            o.network.message_loss = loss;
            return o;
          }(),
          std::vector<sim::DeviceProfile>(n)),
      slow_(n, Nanos(0)),
      other_sinks_(n, nullptr),
      options_(std::move(options)) {
  for (NodeId i = 0; i < n; ++i) {
    keys_.Add(i, KeyOf(i).public_key());
    signers_.push_back(std::make_unique<Ed25519Signer>(KeyOf(i)));
  }
  for (NodeId i = 0; i < n; ++i) {
    faulty_.push_back(std::make_unique<FaultyEnv>(&sim_.env(i), &plan_));
    envs_.push_back(std::make_unique<FaultEnv>(*faulty_[i], blocked_, other_sends_));
    recorders_.push_back(std::make_unique<Recorder>(*this, i));
    MembershipOptions o = options_;
    o.seeds = {0};
    o.address = "10.0.0." + std::to_string(i) + ":7000";
    nodes_.push_back(Membership::Create(*envs_[i], o, *signers_[i], keys_, recorders_[i].get()).value());
    sinks_.push_back(std::make_unique<Sink>(*envs_[i], *nodes_[i], slow_[i], other_sinks_[i]));
    sim_.SetSink(i, sinks_[i].get());
  }
}

Cluster::~Cluster() {
  for (auto& m : nodes_) m->Stop();
}

void Cluster::Start() {
  for (auto& m : nodes_) m->Start();
}

void Cluster::SetSigningKey(NodeId node, const crypto::Identity& identity) {
  signers_[node] = std::make_unique<Ed25519Signer>(identity);
  // The Membership holds a reference to its signer: rebuild it around the new one.
  MembershipOptions o = nodes_[node]->options();
  nodes_[node] = Membership::Create(*envs_[node], o, *signers_[node], keys_, recorders_[node].get()).value();
  sinks_[node] = std::make_unique<Sink>(*envs_[node], *nodes_[node], slow_[node], other_sinks_[node]);
  sim_.SetSink(node, sinks_[node].get());
}

Env& Cluster::env(NodeId i) { return *envs_[i]; }

void Cluster::Crash(NodeId node) {
  nodes_[node]->Stop();
  sim_.SetOnline(node, false);
}

bool Cluster::Converged(const std::vector<NodeId>& live) const {
  for (NodeId i : live) {
    std::vector<NodeId> others;
    for (NodeId j : live) {
      if (j != i) others.push_back(j);
    }
    if (nodes_[i]->AliveMembers() != others) return false;
  }
  return true;
}

std::optional<Nanos> Cluster::RunUntilConverged(const std::vector<NodeId>& live, Nanos limit, Nanos step) {
  const Nanos end = sim_.now() + limit;
  while (sim_.now() < end) {
    if (Converged(live)) return sim_.now();
    sim_.RunUntil(sim_.now() + step);
  }
  if (Converged(live)) return sim_.now();
  return std::nullopt;
}

}  // namespace murmur::membership::testing
