// SecAgg+ wire messages: every stage encodes to exactly EncodedSize bytes and
// decodes to the same bytes; malformed input gives a Status naming the field.
// And the client refuses a malicious server's tricks (each aborts the client,
// which then reveals no share), checked by tampering with real rounds.
#include <doctest/doctest.h>

#include <algorithm>
#include <map>

#include "federated/secagg_messages.h"
#include "tests/federated/secagg_harness.h"

namespace murmur::federated {
namespace {

using testing::SecAggNet;

std::vector<SecAggMessage> Samples() {
  std::vector<SecAggMessage> out;
  SecAggBody adv;
  adv.keys.node = 7;
  adv.keys.c_pk[0] = 1;
  adv.keys.s_pk[31] = 2;
  adv.keys.signature[63] = 3;
  out.emplace_back(SecAggStage::kAdvertiseKeys, 5, adv);
  SecAggBody list;
  list.graph_seed[4] = 9;
  list.ids = {1, 2, 7};
  list.advertised = {adv.keys, adv.keys};
  out.emplace_back(SecAggStage::kKeyList, 5, list);
  SecAggBody sealed;
  sealed.sealed.resize(3);
  sealed.sealed[1].peer = 4;
  sealed.sealed[2].bytes[103] = 0xee;
  out.emplace_back(SecAggStage::kShareKeys, 5, sealed);
  out.emplace_back(SecAggStage::kShareList, 5, sealed);
  SecAggBody masked;
  masked.masked = {1, 0xffffffffu, 3};
  masked.complaints = {2, 6};
  out.emplace_back(SecAggStage::kMaskedInput, 5, masked);
  SecAggBody unmask;
  unmask.ids = {1, 2};
  unmask.dropped = {3};
  unmask.excluded = {6};
  out.emplace_back(SecAggStage::kUnmaskRequest, 5, unmask);
  SecAggBody rev;
  rev.revealed.resize(3);
  rev.revealed[1].owner = 8;
  rev.revealed[1].what = RevealedKind::kMaskKey;
  rev.revealed[1].y[4] = crypto::kShamirPrime - 1;
  rev.revealed[2].owner = 6;
  rev.revealed[2].what = RevealedKind::kPairSeed;
  rev.revealed[2].y[0] = 0xffffffffffffff;
  out.emplace_back(SecAggStage::kUnmaskShares, 5, rev);
  SecAggBody abort;
  abort.reason = SecAggAbortReason::kBadUnmaskRequest;
  out.emplace_back(SecAggStage::kAbort, 5, abort);
  return out;
}

TEST_CASE("Every SecAgg message encodes to EncodedSize bytes and decodes back to the same bytes") {
  const std::size_t expected_sizes[] = {9 + 132,
                                        9 + 32 + 4 + 12 + 4 + 264,
                                        9 + 4 + 3 * 108,
                                        9 + 4 + 3 * 108,
                                        9 + 4 + 12 + 4 + 8,
                                        9 + 4 + 8 + 4 + 4 + 4 + 4,
                                        9 + 4 + 3 * 45,
                                        9 + 1};
  auto samples = Samples();
  for (std::size_t i = 0; i < samples.size(); ++i) {
    CAPTURE(i);
    std::vector<std::uint8_t> bytes;
    samples[i].EncodeTo(bytes);
    CHECK(bytes.size() == samples[i].EncodedSize());
    CHECK(bytes.size() == expected_sizes[i]);
    auto back = SecAggMessage::Decode(bytes);
    REQUIRE(back.ok());
    CHECK((*back)->stage() == samples[i].stage());
    CHECK((*back)->round() == 5);
    std::vector<std::uint8_t> again;
    (*back)->EncodeTo(again);
    CHECK(again == bytes);
    // Every truncation and any trailing byte is refused, but for the cut
    // before an optional list: that is the message without it.
    const std::size_t optional_at = i == 4 ? 9 + 4 + 12 : i == 5 ? 9 + 4 + 8 + 4 + 4 : bytes.size();
    for (std::size_t n = 0; n < bytes.size(); ++n) {
      CAPTURE(n);
      auto cut = SecAggMessage::Decode(std::span(bytes).first(n));
      CHECK(cut.ok() == (n == optional_at));
      if (cut.ok()) CHECK(((*cut)->body().complaints.empty() && (*cut)->body().excluded.empty()));
    }
    bytes.push_back(0);
    CHECK(SecAggMessage::Decode(bytes).status().message().find("1 trailing bytes") != std::string::npos);
  }
}

TEST_CASE("Malformed SecAgg messages are named, and counts are checked before allocation") {
  auto samples = Samples();
  std::vector<std::uint8_t> b;
  samples[4].EncodeTo(b);  // masked input
  auto bad = b;
  bad[0] = 9;
  CHECK(SecAggMessage::Decode(bad).status().message().find("stage 9") != std::string::npos);
  bad = b;
  bad[9] = 0xff;  // count 0x...ff of 4-byte items in 12 bytes
  bad[12] = 0x7f;
  auto r = SecAggMessage::Decode(bad);
  CHECK(r.status().code() == StatusCode::kDataLoss);
  CHECK(r.status().message().find("masked input") != std::string::npos);
  std::vector<std::uint8_t> rev;
  samples[6].EncodeTo(rev);
  bad = rev;
  bad[13 + 4] = 3;  // share kind
  CHECK(SecAggMessage::Decode(bad).status().message().find("kind 3 is not 0, 1 or 2") != std::string::npos);
  bad = rev;
  for (int i = 0; i < 8; ++i) bad[13 + 5 + i] = 0xff;  // 2^64 - 1 is not a field element
  CHECK(SecAggMessage::Decode(bad).status().message().find("GF(2^61 - 1)") != std::string::npos);
  std::vector<std::uint8_t> ab;
  samples[7].EncodeTo(ab);
  ab[9] = 0;
  CHECK(SecAggMessage::Decode(ab).status().message().find("abort reason 0") != std::string::npos);
  // The complaint and exclusion lists are on the wire only when not empty,
  // ascending, so that every message has one encoding.
  const std::size_t complaints_at = 9 + 4 + 12;
  bad = b;
  bad.resize(complaints_at + 4);  // an explicit empty list
  for (std::size_t i = complaints_at; i < bad.size(); ++i) bad[i] = 0;
  CHECK(SecAggMessage::Decode(bad).status().message().find("an empty list of complaints") !=
        std::string::npos);
  bad = b;
  std::swap(bad[complaints_at + 4], bad[complaints_at + 8]);  // 6, 2
  CHECK(SecAggMessage::Decode(bad).status().message().find("complaints not strictly ascending") !=
        std::string::npos);
  std::vector<std::uint8_t> un;
  samples[5].EncodeTo(un);
  un.resize(un.size() - 8);
  un.resize(un.size() + 4, 0);
  CHECK(SecAggMessage::Decode(un).status().message().find("an empty list of excluded") != std::string::npos);
  un.resize(9 + 4 + 8 + 4 + 4);  // no list: none excluded
  auto none = SecAggMessage::Decode(un);
  REQUIRE(none.ok());
  CHECK((*none)->body().excluded.empty());
}

// A malicious-server scenario: `tamper` rewrites what the server sends to
// client `target`; the target must abort with `reason_part` and reveal nothing.
void CheckRefused(const char* name, const SecAggNet::Tamper& tamper, const std::string& reason_part,
                  std::set<NodeId> silent = {}) {
  CAPTURE(name);
  SecAggParams p;
  const NodeId n = 8;
  SecAggNet net(n, p, 16, silent);
  net.tamper = tamper;
  std::vector<std::vector<double>> x(n, std::vector<double>(16, 0.25));
  net.Run(x);
  const auto& target = *net.clients[0];
  CHECK(target.aborted());
  CHECK_MESSAGE(target.abort_reason().find(reason_part) != std::string::npos, target.abort_reason());
  CHECK(target.shares_revealed() == 0);
}

std::shared_ptr<const SecAggMessage> With(const SecAggMessage& m, SecAggBody b) {
  return std::make_shared<const SecAggMessage>(m.stage(), m.round(), std::move(b));
}

TEST_CASE("The client refuses a node listed both as dropped and as surviving") {
  CheckRefused(
      "dropped and surviving",
      [](NodeId to, std::shared_ptr<const SecAggMessage> m) {
        if (to != 0 || m->stage() != SecAggStage::kUnmaskRequest) return m;
        SecAggBody b = m->body();
        b.dropped.push_back(b.ids.front());  // asks for both of its shares
        return With(*m, b);
      },
      "listed twice");
}

TEST_CASE("The client refuses to call most neighbours dropped (survivors below the threshold)") {
  CheckRefused(
      "survivors below threshold",
      [](NodeId to, std::shared_ptr<const SecAggMessage> m) {
        if (to != 0 || m->stage() != SecAggStage::kUnmaskRequest) return m;
        SecAggBody b = m->body();
        while (b.ids.size() > 2) {  // n = 8: k = 7, t = 4
          b.dropped.push_back(b.ids.back());
          b.ids.pop_back();
        }
        std::sort(b.dropped.begin(), b.dropped.end());
        return With(*m, b);
      },
      "surviving neighbours, threshold 4");
}

TEST_CASE("The client refuses repeated keys, even when signed by a colluding client") {
  SecAggParams p;
  const NodeId n = 8;
  SecAggNet net(n, p, 16);
  net.tamper = [&net](NodeId to, std::shared_ptr<const SecAggMessage> m) {
    if (to != 0 || m->stage() != SecAggStage::kKeyList) return m;
    SecAggBody b = m->body();
    // Client 2 re-advertises client 1's mask key under its own signature.
    b.advertised[1].s_pk = b.advertised[0].s_pk;
    b.advertised[1].signature =
        net.identities[b.advertised[1].node].Sign(AdvertisedKeysSignedBytes(m->round(), b.advertised[1]));
    return With(*m, b);
  };
  net.Run(std::vector<std::vector<double>>(n, std::vector<double>(16, 0.0)));
  CHECK(net.clients[0]->aborted());
  CHECK(net.clients[0]->abort_reason().find("repeated key") != std::string::npos);
  CHECK(net.clients[0]->shares_revealed() == 0);
}

TEST_CASE("The client refuses keys that are not signed by their node") {
  CheckRefused(
      "swapped keys",
      [](NodeId to, std::shared_ptr<const SecAggMessage> m) {
        if (to != 0 || m->stage() != SecAggStage::kKeyList) return m;
        SecAggBody b = m->body();
        std::swap(b.advertised[0].c_pk, b.advertised[1].c_pk);  // the server substitutes keys
        return With(*m, b);
      },
      "not signed");
}

TEST_CASE("The client refuses a participant listed twice and neighbours that are not its graph's") {
  CheckRefused(
      "participant twice",
      [](NodeId to, std::shared_ptr<const SecAggMessage> m) {
        if (to != 0 || m->stage() != SecAggStage::kKeyList) return m;
        SecAggBody b = m->body();
        b.ids.insert(b.ids.begin() + 2, b.ids[1]);
        return With(*m, b);
      },
      "listed twice");
  CheckRefused(
      "a neighbour hidden",
      [](NodeId to, std::shared_ptr<const SecAggMessage> m) {
        if (to != 0 || m->stage() != SecAggStage::kKeyList) return m;
        SecAggBody b = m->body();
        b.advertised.pop_back();  // a smaller neighbourhood is an easier one to corner
        return With(*m, b);
      },
      "not this client's graph neighbours");
}

TEST_CASE("The client refuses a neighbourhood below the threshold") {
  CheckRefused(
      "too few participants",
      [](NodeId to, std::shared_ptr<const SecAggMessage> m) {
        if (to != 0 || m->stage() != SecAggStage::kKeyList) return m;
        SecAggBody b = m->body();
        b.ids = {0, b.ids[1]};  // a two-client "round": the sum would be the other's input
        b.advertised.resize(1);
        b.advertised[0] = m->body().advertised[0];
        return With(*m, b);
      },
      "participants, fewer than 3");
  CheckRefused(
      "too few shares",
      [](NodeId to, std::shared_ptr<const SecAggMessage> m) {
        if (to != 0 || m->stage() != SecAggStage::kShareList) return m;
        SecAggBody b = m->body();
        b.sealed.resize(3);  // t = 4 of k = 7
        return With(*m, b);
      },
      "3 neighbours shared keys, threshold 4");
}

TEST_CASE("The client refuses messages out of order") {
  CheckRefused(
      "unmask before input",
      [](NodeId to, std::shared_ptr<const SecAggMessage> m) {
        if (to != 0 || m->stage() != SecAggStage::kShareList) return m;
        SecAggBody b;
        b.ids = {1, 2, 3, 4};
        return std::make_shared<const SecAggMessage>(SecAggStage::kUnmaskRequest, m->round(), b);
      },
      "before the masked input");
}

}  // namespace
}  // namespace murmur::federated
