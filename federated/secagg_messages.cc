#include "federated/secagg_messages.h"

#include <string>

#include "core/bytes.h"
#include "core/check.h"

namespace murmur::federated {

namespace {

constexpr std::size_t kHeaderBytes = 1 + 8;
constexpr std::size_t kRevealedBytes = 4 + 1 + crypto::kShamirChunks * 8;
constexpr std::size_t kSealedEntryBytes = 4 + kSealedShareBytes;
constexpr std::string_view kKeysLabel = "murmur secagg keys v1";

Status Bad(const std::string& what) { return Status::DataLoss("secagg message: " + what); }

// A bounds-checked cursor over untrusted bytes.
class Reader {
 public:
  explicit Reader(std::span<const std::uint8_t> b) : b_(b) {}
  std::size_t remaining() const { return b_.size() - pos_; }
  template <typename T>
  bool Read(T* v) {
    if (remaining() < sizeof(T)) return false;
    *v = ReadLittleEndian<T>(b_.data() + pos_);
    pos_ += sizeof(T);
    return true;
  }
  template <std::size_t N>
  bool ReadArray(std::array<std::uint8_t, N>* a) {
    if (remaining() < N) return false;
    for (std::size_t i = 0; i < N; ++i) (*a)[i] = b_[pos_ + i];
    pos_ += N;
    return true;
  }
  // A count of items of `item_bytes` each: refused when they cannot fit in what remains.
  Status ReadCount(const char* what, std::size_t item_bytes, std::uint32_t* n) {
    if (!Read(n)) return Bad(std::string("truncated ") + what + " count");
    if (*n > remaining() / item_bytes) {
      return Bad(std::string(what) + ": " + std::to_string(*n) + " items of " + std::to_string(item_bytes) +
                 " bytes, " + std::to_string(remaining()) + " bytes remain");
    }
    return Status::Ok();
  }

 private:
  std::span<const std::uint8_t> b_;
  std::size_t pos_ = 0;
};

void PutKeys(std::vector<std::uint8_t>& out, const AdvertisedKeys& k) {
  AppendLittleEndian<std::uint32_t>(out, k.node);
  out.insert(out.end(), k.c_pk.begin(), k.c_pk.end());
  out.insert(out.end(), k.s_pk.begin(), k.s_pk.end());
  out.insert(out.end(), k.signature.begin(), k.signature.end());
}

bool GetKeys(Reader& r, AdvertisedKeys* k) {
  return r.Read(&k->node) && r.ReadArray(&k->c_pk) && r.ReadArray(&k->s_pk) && r.ReadArray(&k->signature);
}

void PutIds(std::vector<std::uint8_t>& out, const std::vector<NodeId>& ids) {
  AppendLittleEndian<std::uint32_t>(out, static_cast<std::uint32_t>(ids.size()));
  for (NodeId id : ids) AppendLittleEndian<std::uint32_t>(out, id);
}

Status GetIds(Reader& r, const char* what, std::vector<NodeId>* ids) {
  std::uint32_t n = 0;
  MURMUR_RETURN_IF_ERROR(r.ReadCount(what, 4, &n));
  ids->resize(n);
  for (auto& id : *ids) r.Read(&id);
  return Status::Ok();
}

// A list that is on the wire only when it is not empty, ascending (so that
// every message has one encoding).
void PutOptionalIds(std::vector<std::uint8_t>& out, const std::vector<NodeId>& ids) {
  if (!ids.empty()) PutIds(out, ids);
}

Status GetOptionalIds(Reader& r, const char* what, std::vector<NodeId>* ids) {
  if (r.remaining() == 0) return Status::Ok();
  MURMUR_RETURN_IF_ERROR(GetIds(r, what, ids));
  if (ids->empty()) return Bad(std::string("an empty list of ") + what + " is left out, not sent");
  for (std::size_t i = 1; i < ids->size(); ++i) {
    if ((*ids)[i - 1] >= (*ids)[i]) return Bad(std::string(what) + " not strictly ascending");
  }
  return Status::Ok();
}

std::size_t OptionalIdsBytes(const std::vector<NodeId>& ids) { return ids.empty() ? 0 : 4 + 4 * ids.size(); }

bool UsesOnly(SecAggStage s, const SecAggBody& b) {
  using S = SecAggStage;
  const bool keys = s == S::kAdvertiseKeys, list = s == S::kKeyList, unmask = s == S::kUnmaskRequest;
  const bool sealed = s == S::kShareKeys || s == S::kShareList;
  return (list || unmask || b.ids.empty()) && (unmask || b.dropped.empty()) &&
         (unmask || b.excluded.empty()) && (s == S::kMaskedInput || b.complaints.empty()) &&
         (list || b.advertised.empty()) && (sealed || b.sealed.empty()) &&
         (s == S::kMaskedInput || b.masked.empty()) && (s == S::kUnmaskShares || b.revealed.empty()) &&
         (keys || b.keys.node == 0) && (list || b.graph_seed == crypto::MaskSeed{});
}

}  // namespace

SecAggMessage::SecAggMessage(SecAggStage stage, std::uint64_t round, SecAggBody body)
    : stage_(stage), round_(round), body_(std::move(body)) {
  MURMUR_CHECK(static_cast<std::uint8_t>(stage_) <= static_cast<std::uint8_t>(SecAggStage::kAbort));
  MURMUR_CHECK(UsesOnly(stage_, body_));
}

std::size_t SecAggMessage::EncodedSize() const {
  const auto& b = body_;
  switch (stage_) {
    case SecAggStage::kAdvertiseKeys: return kHeaderBytes + AdvertisedKeys::kBytes;
    case SecAggStage::kKeyList:
      return kHeaderBytes + crypto::kMaskSeedSize + 4 + 4 * b.ids.size() + 4 +
             AdvertisedKeys::kBytes * b.advertised.size();
    case SecAggStage::kShareKeys:
    case SecAggStage::kShareList: return kHeaderBytes + 4 + kSealedEntryBytes * b.sealed.size();
    case SecAggStage::kMaskedInput:
      return kHeaderBytes + 4 + 4 * b.masked.size() + OptionalIdsBytes(b.complaints);
    case SecAggStage::kUnmaskRequest:
      return kHeaderBytes + 4 + 4 * b.ids.size() + 4 + 4 * b.dropped.size() + OptionalIdsBytes(b.excluded);
    case SecAggStage::kUnmaskShares: return kHeaderBytes + 4 + kRevealedBytes * b.revealed.size();
    case SecAggStage::kAbort: return kHeaderBytes + 1;
  }
  return 0;
}

void SecAggMessage::EncodeTo(std::vector<std::uint8_t>& out) const {
  const auto& b = body_;
  out.push_back(static_cast<std::uint8_t>(stage_));
  AppendLittleEndian<std::uint64_t>(out, round_);
  switch (stage_) {
    case SecAggStage::kAdvertiseKeys: PutKeys(out, b.keys); break;
    case SecAggStage::kKeyList:
      out.insert(out.end(), b.graph_seed.begin(), b.graph_seed.end());
      PutIds(out, b.ids);
      AppendLittleEndian<std::uint32_t>(out, static_cast<std::uint32_t>(b.advertised.size()));
      for (const auto& k : b.advertised) PutKeys(out, k);
      break;
    case SecAggStage::kShareKeys:
    case SecAggStage::kShareList:
      AppendLittleEndian<std::uint32_t>(out, static_cast<std::uint32_t>(b.sealed.size()));
      for (const auto& s : b.sealed) {
        AppendLittleEndian<std::uint32_t>(out, s.peer);
        out.insert(out.end(), s.bytes.begin(), s.bytes.end());
      }
      break;
    case SecAggStage::kMaskedInput:
      AppendLittleEndian<std::uint32_t>(out, static_cast<std::uint32_t>(b.masked.size()));
      for (std::uint32_t v : b.masked) AppendLittleEndian<std::uint32_t>(out, v);
      PutOptionalIds(out, b.complaints);
      break;
    case SecAggStage::kUnmaskRequest:
      PutIds(out, b.ids);
      PutIds(out, b.dropped);
      PutOptionalIds(out, b.excluded);
      break;
    case SecAggStage::kUnmaskShares:
      AppendLittleEndian<std::uint32_t>(out, static_cast<std::uint32_t>(b.revealed.size()));
      for (const auto& r : b.revealed) {
        AppendLittleEndian<std::uint32_t>(out, r.owner);
        out.push_back(static_cast<std::uint8_t>(r.what));
        for (auto v : r.y) AppendLittleEndian<std::uint64_t>(out, v);
      }
      break;
    case SecAggStage::kAbort: out.push_back(static_cast<std::uint8_t>(b.reason)); break;
  }
}

Result<std::shared_ptr<const SecAggMessage>> SecAggMessage::Decode(std::span<const std::uint8_t> bytes) {
  Reader r(bytes);
  std::uint8_t stage_byte = 0;
  std::uint64_t round = 0;
  if (!r.Read(&stage_byte) || !r.Read(&round)) {
    return Bad(std::to_string(bytes.size()) + " bytes, the header needs " + std::to_string(kHeaderBytes));
  }
  if (stage_byte > static_cast<std::uint8_t>(SecAggStage::kAbort)) {
    return Bad("stage " + std::to_string(stage_byte) + " is not 0 to 7");
  }
  const auto stage = static_cast<SecAggStage>(stage_byte);
  SecAggBody b;
  std::uint32_t n = 0;
  switch (stage) {
    case SecAggStage::kAdvertiseKeys:
      if (!GetKeys(r, &b.keys)) return Bad("truncated advertised keys");
      break;
    case SecAggStage::kKeyList:
      if (!r.ReadArray(&b.graph_seed)) return Bad("truncated graph seed");
      MURMUR_RETURN_IF_ERROR(GetIds(r, "participants", &b.ids));
      MURMUR_RETURN_IF_ERROR(r.ReadCount("advertised keys", AdvertisedKeys::kBytes, &n));
      b.advertised.resize(n);
      for (auto& k : b.advertised) (void)GetKeys(r, &k);
      break;
    case SecAggStage::kShareKeys:
    case SecAggStage::kShareList:
      MURMUR_RETURN_IF_ERROR(r.ReadCount("sealed shares", kSealedEntryBytes, &n));
      b.sealed.resize(n);
      for (auto& s : b.sealed) {
        r.Read(&s.peer);
        r.ReadArray(&s.bytes);
      }
      break;
    case SecAggStage::kMaskedInput:
      MURMUR_RETURN_IF_ERROR(r.ReadCount("masked input", 4, &n));
      b.masked.resize(n);
      for (auto& v : b.masked) r.Read(&v);
      MURMUR_RETURN_IF_ERROR(GetOptionalIds(r, "complaints", &b.complaints));
      break;
    case SecAggStage::kUnmaskRequest:
      MURMUR_RETURN_IF_ERROR(GetIds(r, "survivors", &b.ids));
      MURMUR_RETURN_IF_ERROR(GetIds(r, "dropped", &b.dropped));
      MURMUR_RETURN_IF_ERROR(GetOptionalIds(r, "excluded", &b.excluded));
      break;
    case SecAggStage::kUnmaskShares:
      MURMUR_RETURN_IF_ERROR(r.ReadCount("revealed shares", kRevealedBytes, &n));
      b.revealed.resize(n);
      for (std::size_t i = 0; i < n; ++i) {
        auto& s = b.revealed[i];
        std::uint8_t what = 0;
        r.Read(&s.owner);
        r.Read(&what);
        if (what > 2)
          return Bad("revealed share " + std::to_string(i) + ": kind " + std::to_string(what) +
                     " is not 0, 1 or 2");
        s.what = static_cast<RevealedKind>(what);
        for (auto& v : s.y) {
          r.Read(&v);
          if (v >= crypto::kShamirPrime)
            return Bad("revealed share " + std::to_string(i) + ": value not in GF(2^61 - 1)");
        }
      }
      break;
    case SecAggStage::kAbort: {
      std::uint8_t reason = 0;
      if (!r.Read(&reason)) return Bad("truncated abort reason");
      if (reason < 1 || reason > 5) return Bad("abort reason " + std::to_string(reason) + " is not 1 to 5");
      b.reason = static_cast<SecAggAbortReason>(reason);
      break;
    }
  }
  if (r.remaining() != 0) return Bad(std::to_string(r.remaining()) + " trailing bytes");
  return std::make_shared<const SecAggMessage>(stage, round, std::move(b));
}

std::vector<std::uint8_t> AdvertisedKeysSignedBytes(std::uint64_t round, const AdvertisedKeys& keys) {
  std::vector<std::uint8_t> m;
  m.reserve(kKeysLabel.size() + 8 + 4 + 2 * crypto::kDhKeySize);
  const auto* label = reinterpret_cast<const std::uint8_t*>(kKeysLabel.data());
  m.insert(m.end(), label, label + kKeysLabel.size());
  AppendLittleEndian<std::uint64_t>(m, round);
  AppendLittleEndian<std::uint32_t>(m, keys.node);
  m.insert(m.end(), keys.c_pk.begin(), keys.c_pk.end());
  m.insert(m.end(), keys.s_pk.begin(), keys.s_pk.end());
  return m;
}

}  // namespace murmur::federated
