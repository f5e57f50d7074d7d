#include "federated/secagg_client.h"

#include <sodium.h>

#include <algorithm>
#include <set>

#include "core/bytes.h"
#include "core/check.h"
#include "crypto/shamir.h"
#include "federated/secagg_graph.h"

namespace murmur::federated {

namespace {

void PutShare(std::vector<std::uint8_t>& out, const crypto::ShamirShare& s) {
  for (auto v : s.y) AppendLittleEndian<std::uint64_t>(out, v);
}

}  // namespace

SecAggClient::SecAggClient(Env& env, NodeId server, std::uint64_t round, SecAggClientOptions options)
    : env_(env), server_(server), round_(round), options_(std::move(options)) {
  MURMUR_CHECK(options_.identity != nullptr && options_.directory);
}

SecAggClient::~SecAggClient() {
  sodium_memzero(c_keys_.secret_key.data(), c_keys_.secret_key.size());
  sodium_memzero(s_keys_.secret_key.data(), s_keys_.secret_key.size());
  sodium_memzero(self_seed_.data(), self_seed_.size());
  sodium_memzero(coins_.data(), coins_.size());
}

void SecAggClient::Send(SecAggStage stage, SecAggBody body) {
  env_.Send(server_, std::make_shared<const SecAggMessage>(stage, round_, std::move(body)));
}

void SecAggClient::Abort(SecAggAbortReason reason, std::string why) {
  if (state_ == State::kAborted || state_ == State::kDone || state_ == State::kSilent) return;
  state_ = State::kAborted;
  abort_reason_ = std::move(why);
  neighbours_.clear();
  SecAggBody b;
  b.reason = reason;
  Send(SecAggStage::kAbort, std::move(b));
}

void SecAggClient::Start() {
  MURMUR_CHECK(state_ == State::kIdle);
  crypto::MaskSeed master{};
  if (options_.deterministic_secrets) {
    Rng rng = env_.MakeRng(RngPurpose::kSecureAggregation).Fork(round_);
    for (std::size_t i = 0; i < master.size(); i += 4) {
      const std::uint32_t w = rng.NextU32();
      for (int j = 0; j < 4; ++j) master[i + j] = static_cast<std::uint8_t>(w >> (8 * j));
    }
  } else {
    master = crypto::RandomSeed();
  }
  // Four independent secrets from one master seed: c^SK, s^SK, b, Shamir coins.
  std::array<std::uint32_t, 32> words{};
  crypto::ExpandMask(master, words);
  auto take = [&](int at, crypto::MaskSeed* out) {
    for (int i = 0; i < 8; ++i) {
      for (int j = 0; j < 4; ++j) (*out)[4 * i + j] = static_cast<std::uint8_t>(words[at + i] >> (8 * j));
    }
  };
  crypto::MaskSeed c_sk{}, s_sk{};
  take(0, &c_sk);
  take(8, &s_sk);
  take(16, &self_seed_);
  take(24, &coins_);
  c_keys_ = crypto::DhKeyPairFromSecret(c_sk);
  s_keys_ = crypto::DhKeyPairFromSecret(s_sk);
  sodium_memzero(words.data(), sizeof(words));
  sodium_memzero(master.data(), master.size());
  sodium_memzero(c_sk.data(), c_sk.size());
  sodium_memzero(s_sk.data(), s_sk.size());

  SecAggBody b;
  b.keys.node = env_.self();
  b.keys.c_pk = c_keys_.public_key;
  b.keys.s_pk = s_keys_.public_key;
  b.keys.signature = options_.identity->Sign(AdvertisedKeysSignedBytes(round_, b.keys));
  state_ = State::kAdvertised;
  Send(SecAggStage::kAdvertiseKeys, std::move(b));
}

void SecAggClient::OnMessage(NodeId from, const SecAggMessage& m) {
  if (from != server_ || m.round() != round_) return;  // not this round's server: ignored
  if (state_ == State::kAborted || state_ == State::kDone || state_ == State::kSilent) return;
  switch (m.stage()) {
    case SecAggStage::kKeyList:
      if (state_ != State::kAdvertised) return Abort(SecAggAbortReason::kOutOfOrder, "key list out of order");
      return OnKeyList(m);
    case SecAggStage::kShareList:
      if (state_ != State::kShared) return Abort(SecAggAbortReason::kOutOfOrder, "share list out of order");
      return OnShareList(m);
    case SecAggStage::kUnmaskRequest:
      if (state_ != State::kSentInput) {
        return Abort(SecAggAbortReason::kOutOfOrder, "unmask request before the masked input was sent");
      }
      return OnUnmaskRequest(m);
    default: return Abort(SecAggAbortReason::kOutOfOrder, "a client-to-server message from the server");
  }
}

void SecAggClient::OnKeyList(const SecAggMessage& m) {
  const SecAggBody& b = m.body();
  const NodeId self = env_.self();
  const auto& ids = b.ids;
  for (std::size_t i = 1; i < ids.size(); ++i) {
    if (ids[i] <= ids[i - 1]) {
      return Abort(SecAggAbortReason::kBadKeyList,
                   "participant " + std::to_string(ids[i]) + " listed twice or out of order");
    }
  }
  if (!std::binary_search(ids.begin(), ids.end(), self)) {
    return Abort(SecAggAbortReason::kBadKeyList, "the key list leaves this client out");
  }
  if (ids.size() < std::max<std::size_t>(options_.params.min_participants, 2)) {
    return Abort(SecAggAbortReason::kTooFewNeighbours, std::to_string(ids.size()) +
                                                           " participants, fewer than " +
                                                           std::to_string(options_.params.min_participants));
  }
  const std::vector<NodeId> want = SecAggNeighbours(b.graph_seed, ids, self, options_.params.neighbours);
  const std::size_t k = want.size();
  threshold_ = SecAggThreshold(k, options_.params.threshold);
  std::vector<NodeId> got;
  for (const auto& a : b.advertised) got.push_back(a.node);
  std::sort(got.begin(), got.end());
  if (got != want)
    return Abort(SecAggAbortReason::kBadKeyList, "the neighbour keys are not this client's graph neighbours");
  std::set<crypto::DhPublicKey> seen = {c_keys_.public_key, s_keys_.public_key};
  for (const auto& a : b.advertised) {
    const crypto::SignPublicKey* pk = options_.directory(a.node);
    if (pk == nullptr || !crypto::VerifySignature(*pk, AdvertisedKeysSignedBytes(round_, a), a.signature)) {
      return Abort(SecAggAbortReason::kBadKeyList,
                   "keys of node " + std::to_string(a.node) + " are not signed by it");
    }
    if (!seen.insert(a.c_pk).second || !seen.insert(a.s_pk).second) {
      return Abort(SecAggAbortReason::kBadKeyList,
                   "node " + std::to_string(a.node) + " advertises a repeated key");
    }
  }
  // Shares of b_u and s_u^SK at x = v + 1 for each neighbour v, threshold t.
  std::vector<std::uint32_t> xs;
  for (NodeId v : want) xs.push_back(v + 1);
  crypto::MaskSeed s_coins = coins_, b_coins = coins_;
  s_coins[0] ^= 1;  // two independent coin streams
  const auto b_shares = crypto::ShamirSplit(self_seed_, threshold_, xs, b_coins);
  const auto s_shares = crypto::ShamirSplit(s_keys_.secret_key, threshold_, xs, s_coins);
  SecAggBody out;
  for (std::size_t i = 0; i < k; ++i) {
    const AdvertisedKeys& a = *std::find_if(b.advertised.begin(), b.advertised.end(),
                                            [&](const AdvertisedKeys& x) { return x.node == want[i]; });
    auto key = crypto::AgreeSeed(c_keys_, a.c_pk, round_, crypto::kShareKeyLabel);
    if (!key.ok()) return Abort(SecAggAbortReason::kBadKeyList, key.status().message());
    std::vector<std::uint8_t> plain;
    AppendLittleEndian<std::uint32_t>(plain, self);
    AppendLittleEndian<std::uint32_t>(plain, a.node);
    PutShare(plain, b_shares[i]);
    PutShare(plain, s_shares[i]);
    crypto::Bytes sealed = crypto::SealShares(*key, self, a.node, round_, plain);
    sodium_memzero(plain.data(), plain.size());
    SealedShare s;
    s.peer = a.node;
    std::copy(sealed.begin(), sealed.end(), s.bytes.begin());
    out.sealed.push_back(s);
    neighbours_[a.node].keys = a;
  }
  state_ = State::kShared;
  Send(SecAggStage::kShareKeys, std::move(out));
  if (options_.silent_after_share_keys) state_ = State::kSilent;
}

void SecAggClient::OnShareList(const SecAggMessage& m) {
  const NodeId self = env_.self();
  for (const SealedShare& s : m.body().sealed) {
    auto it = neighbours_.find(s.peer);
    if (it == neighbours_.end()) {
      return Abort(SecAggAbortReason::kBadShares,
                   "shares from node " + std::to_string(s.peer) + ", not a neighbour");
    }
    Neighbour& nb = it->second;
    if (nb.shared || nb.complained)
      return Abort(SecAggAbortReason::kBadShares, "two share sets from node " + std::to_string(s.peer));
    // Shares that do not open, or open to something that is not a share
    // for this client, were sealed wrongly by their sender (the server
    // cannot seal for it: the key comes from both signed keys): the sender
    // is left out of this client's masks and complained of, and the round
    // goes on without it (docs/protocol.md, "Complaints").
    auto key = crypto::AgreeSeed(c_keys_, nb.keys.c_pk, round_, crypto::kShareKeyLabel);
    if (!key.ok()) return Abort(SecAggAbortReason::kBadShares, key.status().message());
    auto plain = crypto::OpenShares(*key, s.peer, self, round_, s.bytes);
    bool opens = plain.ok() && plain->size() == kSharePlainBytes &&
                 ReadLittleEndian<std::uint32_t>(plain->data()) == s.peer &&
                 ReadLittleEndian<std::uint32_t>(plain->data() + 4) == self;
    for (std::size_t c = 0; opens && c < crypto::kShamirChunks; ++c) {
      nb.b_share.y[c] = ReadLittleEndian<std::uint64_t>(plain->data() + 8 + 8 * c);
      nb.s_share.y[c] = ReadLittleEndian<std::uint64_t>(plain->data() + 8 + 8 * (crypto::kShamirChunks + c));
      opens = nb.b_share.y[c] < crypto::kShamirPrime && nb.s_share.y[c] < crypto::kShamirPrime;
    }
    if (plain.ok()) sodium_memzero(plain->data(), plain->size());
    if (!opens) {
      nb.b_share = nb.s_share = RevealedShare{};
      nb.complained = true;
      continue;
    }
    nb.b_share.owner = nb.s_share.owner = s.peer;
    nb.b_share.what = RevealedKind::kSelfMaskSeed;
    nb.s_share.what = RevealedKind::kMaskKey;
    nb.shared = true;
  }
  const auto shared = static_cast<std::size_t>(
      std::count_if(neighbours_.begin(), neighbours_.end(), [](const auto& kv) { return kv.second.shared; }));
  if (shared < threshold_) {
    return Abort(SecAggAbortReason::kTooFewNeighbours,
                 std::to_string(shared) + " neighbours shared keys, threshold " + std::to_string(threshold_));
  }
  state_ = State::kHaveShares;
  MaybeSendMasked();
}

void SecAggClient::SetInput(std::span<const double> values) {
  input_.assign(values.size(), 0);
  SecAggQuantizer(options_.params.quantizer).Quantize(values, input_);
  has_input_ = true;
  MaybeSendMasked();
}

void SecAggClient::MaybeSendMasked() {
  if (state_ != State::kHaveShares || !has_input_) return;
  const NodeId self = env_.self();
  SecAggBody b;
  b.masked = std::move(input_);
  crypto::AddMask(self_seed_, false, b.masked);
  for (const auto& [v, nb] : neighbours_) {
    if (nb.complained) b.complaints.push_back(v);  // ascending: neighbours_ is ordered
    if (!nb.shared) continue;
    auto seed = crypto::AgreeSeed(s_keys_, nb.keys.s_pk, round_, crypto::kMaskSeedLabel);
    if (!seed.ok()) return Abort(SecAggAbortReason::kBadKeyList, seed.status().message());
    crypto::AddMask(*seed, /*subtract=*/self > v, b.masked);
  }
  state_ = State::kSentInput;
  Send(SecAggStage::kMaskedInput, std::move(b));
}

void SecAggClient::OnUnmaskRequest(const SecAggMessage& m) {
  const auto& survivors = m.body().ids;
  const auto& dropped = m.body().dropped;
  const auto& excluded = m.body().excluded;
  std::set<NodeId> seen;
  for (const auto* list : {&survivors, &dropped, &excluded}) {
    for (NodeId v : *list) {
      if (!seen.insert(v).second) {
        return Abort(SecAggAbortReason::kBadUnmaskRequest,
                     "node " + std::to_string(v) + " listed twice (dropped and surviving, or repeated)");
      }
      auto it = neighbours_.find(v);
      if (it == neighbours_.end() || !it->second.shared) {
        return Abort(SecAggAbortReason::kBadUnmaskRequest,
                     "node " + std::to_string(v) + " never shared keys with this client");
      }
    }
  }
  const auto shared = static_cast<std::size_t>(
      std::count_if(neighbours_.begin(), neighbours_.end(), [](const auto& kv) { return kv.second.shared; }));
  if (seen.size() != shared) {
    return Abort(SecAggAbortReason::kBadUnmaskRequest,
                 "the unmask request leaves neighbours unaccounted for");
  }
  if (survivors.size() < threshold_) {
    return Abort(
        SecAggAbortReason::kTooFewNeighbours,
        std::to_string(survivors.size()) + " surviving neighbours, threshold " + std::to_string(threshold_));
  }
  SecAggBody b;
  for (NodeId v : survivors) b.revealed.push_back(neighbours_[v].b_share);
  for (NodeId v : dropped) b.revealed.push_back(neighbours_[v].s_share);
  // An excluded neighbour's input is not in the sum, so the mask this client
  // added for it must come out: the pairwise seed itself, which reveals
  // nothing of this client's input while a threshold of its other
  // neighbours survive (checked above) and never the excluded one's mask key.
  for (NodeId v : excluded) {
    auto seed = crypto::AgreeSeed(s_keys_, neighbours_[v].keys.s_pk, round_, crypto::kMaskSeedLabel);
    if (!seed.ok()) return Abort(SecAggAbortReason::kBadUnmaskRequest, seed.status().message());
    const std::uint32_t x = 1;
    crypto::ShamirShare whole = crypto::ShamirSplit(*seed, 1, std::span(&x, 1), crypto::MaskSeed{})[0];
    sodium_memzero(seed->data(), seed->size());
    RevealedShare r;
    r.owner = v;
    r.what = RevealedKind::kPairSeed;
    r.y = whole.y;
    b.revealed.push_back(r);
  }
  shares_revealed_ = b.revealed.size();
  state_ = State::kDone;
  neighbours_.clear();
  Send(SecAggStage::kUnmaskShares, std::move(b));
}

}  // namespace murmur::federated
