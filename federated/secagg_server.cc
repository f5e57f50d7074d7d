#include "federated/secagg_server.h"

#include <sodium.h>

#include <algorithm>

#include "core/check.h"
#include "crypto/shamir.h"
#include "federated/secagg_graph.h"

namespace murmur::federated {

SecAggServer::SecAggServer(Env& env, std::uint64_t round, std::vector<NodeId> selected,
                           SecAggServerOptions options, std::function<void(SecAggOutcome)> done)
    : env_(env),
      round_(round),
      selected_(std::move(selected)),
      options_(std::move(options)),
      done_(std::move(done)) {
  MURMUR_CHECK(options_.length > 0 && done_);
}

SecAggServer::~SecAggServer() {
  if (timer_ != 0) env_.CancelTimer(timer_);
}

void SecAggServer::Start() {
  Expect(std::set<NodeId>(selected_.begin(), selected_.end()), options_.key_timeout);
}

void SecAggServer::Expect(const std::set<NodeId>& who, Nanos timeout) {
  waiting_.clear();
  for (NodeId c : who) {
    if (!aborted_.count(c)) waiting_.insert(c);
  }
  if (timer_ != 0) env_.CancelTimer(timer_);
  timer_ = 0;
  const std::uint64_t epoch = ++timer_epoch_;
  if (timeout.count() > 0) {
    timer_ = env_.StartTimer(timeout, [this, epoch] {
      if (epoch != timer_epoch_ || stage_ == Stage::kDone) return;
      timer_ = 0;
      CloseStage();
    });
  }
  MaybeAdvance();
}

void SecAggServer::MaybeAdvance() {
  if (stage_ != Stage::kDone && waiting_.empty()) CloseStage();
}

void SecAggServer::ClientGone(NodeId client) {
  if (stage_ == Stage::kDone || waiting_.erase(client) == 0) return;
  MaybeAdvance();
}

void SecAggServer::OnMessage(NodeId from, const SecAggMessage& m) {
  if (stage_ == Stage::kDone || m.round() != round_) return;
  const SecAggBody& b = m.body();
  if (m.stage() == SecAggStage::kAbort) {
    if (aborted_.insert(from).second && keys_.count(from)) ++outcome_.clients_aborted;
    waiting_.erase(from);
    return MaybeAdvance();
  }
  if (!waiting_.count(from)) return;  // late, repeated or never asked: ignored
  switch (stage_) {
    case Stage::kAdvertise: {
      if (m.stage() != SecAggStage::kAdvertiseKeys || b.keys.node != from) return;
      if (options_.directory) {
        const crypto::SignPublicKey* pk = options_.directory(from);
        if (pk == nullptr ||
            !crypto::VerifySignature(*pk, AdvertisedKeysSignedBytes(round_, b.keys), b.keys.signature)) {
          return;
        }
      }
      for (const auto& [id, k] : keys_) {  // a repeated key would let one client's masks cancel another's
        if (k.c_pk == b.keys.c_pk || k.s_pk == b.keys.s_pk || k.c_pk == b.keys.s_pk || k.s_pk == b.keys.c_pk)
          return;
      }
      keys_[from] = b.keys;
      break;
    }
    case Stage::kShare: {
      if (m.stage() != SecAggStage::kShareKeys) return;
      const auto& nb = neighbours_[from];
      std::set<NodeId> to;
      for (const auto& s : b.sealed) to.insert(s.peer);
      if (to.size() != b.sealed.size() || to != std::set<NodeId>(nb.begin(), nb.end())) return;
      for (const auto& s : b.sealed) {
        SealedShare fwd = s;
        fwd.peer = from;
        inbox_[s.peer].push_back(fwd);
      }
      shared_.insert(from);
      break;
    }
    case Stage::kInput: {
      if (m.stage() != SecAggStage::kMaskedInput || b.masked.size() != options_.length) return;
      // A complaint names a neighbour whose shares this server forwarded to
      // the client; anything else is a malformed message, ignored.
      const auto& nb = neighbours_[from];
      for (NodeId x : b.complaints) {
        if (!shared_.count(x) || std::find(nb.begin(), nb.end(), x) == nb.end()) return;
      }
      masked_[from] = b.masked;
      if (!b.complaints.empty())
        complaints_[from] = std::set<NodeId>(b.complaints.begin(), b.complaints.end());
      break;
    }
    case Stage::kUnmask:
      if (m.stage() != SecAggStage::kUnmaskShares) return;
      revealed_[from] = b.revealed;
      break;
    case Stage::kDone: return;
  }
  waiting_.erase(from);
  MaybeAdvance();
}

void SecAggServer::CloseStage() {
  const std::size_t min = std::max<std::size_t>(options_.params.min_participants, 2);
  auto too_few = [&](std::size_t n, const char* what) {
    Finish(Status::Aborted("secure aggregation round " + std::to_string(round_) + ": " + std::to_string(n) +
                           " clients " + what + ", fewer than " + std::to_string(min)));
  };
  switch (stage_) {
    case Stage::kAdvertise:
      if (keys_.size() < min) return too_few(keys_.size(), "advertised keys");
      SendKeyLists();
      stage_ = Stage::kShare;
      {
        std::set<NodeId> u1;
        for (const auto& kv : keys_) u1.insert(kv.first);
        return Expect(u1, options_.key_timeout);
      }
    case Stage::kShare:
      if (shared_.size() < min) return too_few(shared_.size(), "shared keys");
      SendShareLists();
      stage_ = Stage::kInput;
      return Expect(shared_, options_.input_timeout);
    case Stage::kInput: {
      Exclude();
      if (InSum() < min) return too_few(InSum(), "sent masked inputs and were not excluded");
      SendUnmaskRequests();
      stage_ = Stage::kUnmask;
      std::set<NodeId> u3;
      for (const auto& kv : masked_) u3.insert(kv.first);
      return Expect(u3, options_.key_timeout);
    }
    case Stage::kUnmask: return Unmask();
    case Stage::kDone: return;
  }
}

void SecAggServer::SendKeyLists() {
  if (options_.deterministic_seed) {
    Rng rng = env_.MakeRng(RngPurpose::kSecureAggregation).Fork(round_);
    for (auto& byte : graph_seed_) byte = static_cast<std::uint8_t>(rng.NextU32());
  } else {
    graph_seed_ = crypto::RandomSeed();
  }
  std::vector<NodeId> u1;
  for (const auto& kv : keys_) u1.push_back(kv.first);
  for (NodeId u : u1) {
    neighbours_[u] = SecAggNeighbours(graph_seed_, u1, u, options_.params.neighbours);
    SecAggBody b;
    b.graph_seed = graph_seed_;
    b.ids = u1;
    for (NodeId v : neighbours_[u]) b.advertised.push_back(keys_[v]);
    env_.Send(u, std::make_shared<const SecAggMessage>(SecAggStage::kKeyList, round_, std::move(b)));
  }
}

void SecAggServer::SendShareLists() {
  for (NodeId v : shared_) {
    SecAggBody b;
    for (const auto& s : inbox_[v]) {
      if (shared_.count(s.peer)) b.sealed.push_back(s);
    }
    env_.Send(v, std::make_shared<const SecAggMessage>(SecAggStage::kShareList, round_, std::move(b)));
  }
  inbox_.clear();
}

void SecAggServer::Exclude() {
  for (const auto& [from, accused] : complaints_) {
    for (NodeId x : accused) {
      excluded_.insert(x);
      outcome_.complaints.emplace_back(from, x);
    }
  }
  outcome_.excluded.assign(excluded_.begin(), excluded_.end());
}

bool SecAggServer::InSum(NodeId u) const { return masked_.count(u) > 0 && excluded_.count(u) == 0; }

std::size_t SecAggServer::InSum() const {
  std::size_t n = 0;
  for (const auto& kv : masked_) n += InSum(kv.first);
  return n;
}

bool SecAggServer::Complained(NodeId v, NodeId u) const {
  auto it = complaints_.find(v);
  return it != complaints_.end() && it->second.count(u) > 0;
}

void SecAggServer::SendUnmaskRequests() {
  for (const auto& [v, y] : masked_) {
    SecAggBody b;
    for (NodeId u : neighbours_[v]) {
      if (!shared_.count(u) || Complained(v, u)) continue;  // v added no mask for u
      (excluded_.count(u) ? b.excluded : InSum(u) ? b.ids : b.dropped).push_back(u);
    }
    env_.Send(v, std::make_shared<const SecAggMessage>(SecAggStage::kUnmaskRequest, round_, std::move(b)));
  }
}

void SecAggServer::Unmask() {
  const std::size_t t =
      SecAggThreshold(NeighbourCount(keys_.size(), options_.params.neighbours), options_.params.threshold);
  std::vector<std::uint32_t> acc(options_.length, 0);
  for (const auto& [u, y] : masked_) {
    if (!InSum(u)) continue;
    for (std::size_t i = 0; i < acc.size(); ++i) acc[i] += y[i];
  }
  // The shares of u's secret `what` revealed by u's neighbours.
  auto reconstruct = [&](NodeId u, RevealedKind what) -> Result<crypto::ShamirSecret> {
    std::vector<crypto::ShamirShare> shares;
    for (NodeId v : neighbours_[u]) {
      auto it = revealed_.find(v);
      if (it == revealed_.end()) continue;
      for (const auto& r : it->second) {
        if (r.owner == u && r.what == what) {
          shares.push_back({v + 1, r.y});
          break;
        }
      }
    }
    const char* name = what == RevealedKind::kSelfMaskSeed ? "self-mask seed" : "mask key";
    if (shares.size() < t) {
      return Status::Aborted("secure aggregation round " + std::to_string(round_) + ": client " +
                             std::to_string(u) + "'s " + name + " has " + std::to_string(shares.size()) +
                             " shares, threshold " + std::to_string(t) + "; the sum stays masked");
    }
    auto secret = crypto::ShamirCombine(shares, t);
    if (!secret.ok())
      return secret.status().WithContext(std::string("client ") + std::to_string(u) + "'s " + name);
    return secret;
  };
  for (const auto& [u, y] : masked_) {
    if (!InSum(u)) continue;
    auto b = reconstruct(u, RevealedKind::kSelfMaskSeed);
    if (!b.ok()) return Finish(b.status());
    crypto::AddMask(*b, /*subtract=*/true, acc);
    sodium_memzero(b->data(), b->size());
  }
  for (NodeId u : shared_) {
    if (masked_.count(u) || excluded_.count(u)) continue;
    ++outcome_.dropped;
    auto sk = reconstruct(u, RevealedKind::kMaskKey);
    if (!sk.ok()) return Finish(sk.status());
    crypto::DhKeyPair pair = crypto::DhKeyPairFromSecret(*sk);
    sodium_memzero(sk->data(), sk->size());
    if (pair.public_key != keys_[u].s_pk) {
      return Finish(Status::DataLoss("secure aggregation: client " + std::to_string(u) +
                                     "'s reconstructed mask key does not match its advertised key"));
    }
    for (NodeId v : neighbours_[u]) {
      if (!InSum(v)) continue;
      auto seed = crypto::AgreeSeed(pair, keys_[v].s_pk, round_, crypto::kMaskSeedLabel);
      if (!seed.ok()) return Finish(seed.status());
      // v added +PRG(s_uv) when v < u and -PRG(s_uv) otherwise; take it back.
      crypto::AddMask(*seed, /*subtract=*/v < u, acc);
    }
    sodium_memzero(pair.secret_key.data(), pair.secret_key.size());
  }
  // Each survivor that masked for an excluded client revealed the pairwise
  // seed; the mask comes out as a dropped client's would.
  for (NodeId x : excluded_) {
    for (NodeId v : neighbours_[x]) {
      if (!InSum(v) || Complained(v, x)) continue;
      const RevealedShare* seed_of = nullptr;
      if (auto it = revealed_.find(v); it != revealed_.end()) {
        for (const auto& r : it->second) {
          if (r.owner == x && r.what == RevealedKind::kPairSeed) seed_of = &r;
        }
      }
      if (seed_of == nullptr) {
        return Finish(Status::Aborted("secure aggregation round " + std::to_string(round_) + ": client " +
                                      std::to_string(v) + " did not reveal its mask seed with client " +
                                      std::to_string(x) +
                                      ", excluded for a complaint; the sum stays masked"));
      }
      const crypto::ShamirShare whole{1, seed_of->y};
      auto seed = crypto::ShamirCombine(std::span(&whole, 1), 1);
      if (!seed.ok())
        return Finish(seed.status().WithContext("client " + std::to_string(v) + "'s mask seed"));
      crypto::AddMask(*seed, /*subtract=*/v < x, acc);
      sodium_memzero(seed->data(), seed->size());
    }
  }
  SecAggQuantizer q(options_.params.quantizer);
  outcome_.sum.assign(acc.size(), 0.0);
  q.Dequantize(acc, InSum(), outcome_.sum);
  outcome_.error_bound = q.ErrorBound(InSum());
  for (const auto& kv : masked_) {
    if (InSum(kv.first)) outcome_.survivors.push_back(kv.first);
  }
  Finish(Status::Ok());
}

void SecAggServer::Finish(Status status) {
  stage_ = Stage::kDone;
  if (timer_ != 0) env_.CancelTimer(timer_);
  timer_ = 0;
  outcome_.status = std::move(status);
  // `done` may destroy this object: touch no member after it.
  auto done = std::move(done_);
  auto outcome = std::move(outcome_);
  done(std::move(outcome));
}

}  // namespace murmur::federated
