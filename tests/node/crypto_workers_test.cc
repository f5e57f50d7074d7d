// Sealing on crypto workers (a core::ThreadPool in the Transport): frames
// sealed in parallel are byte for byte those sealed one by one (so nonces
// are unique and in wire order), tampering is still caught, and two
// transports with workers and frequent rekeys deliver many chunked messages
// in order.
#include <doctest/doctest.h>
#include <sodium.h>

#include <vector>

#include "core/thread_pool.h"
#include "crypto/secure_channel.h"
#include "gossip/messages.h"
#include "tests/node/loopback.h"

namespace murmur::node {
namespace {

using testing::Creds;
using testing::Endpoint;
using testing::Policy;
using testing::Seeded;
using testing::WaitFor;

TEST_CASE("The default is 2 crypto workers with 4 or more hardware threads, none below") {
  CHECK(DefaultCryptoThreads(1) == 0);
  CHECK(DefaultCryptoThreads(2) == 0);
  CHECK(DefaultCryptoThreads(3) == 0);
  CHECK(DefaultCryptoThreads(4) == 2);
  CHECK(DefaultCryptoThreads(16) == 2);
}

std::pair<crypto::SecureChannel, crypto::SecureChannel> Pair(crypto::ChannelOptions o,
                                                             crypto::Cipher cipher) {
  crypto::CipherKey k1, k2;
  k1.fill(0x5A);
  k2.fill(0xA5);
  crypto::CipherState send(cipher), recv(cipher);
  send.InitializeKey(k1);
  recv.InitializeKey(k2);
  crypto::CipherState send2(cipher), recv2(cipher);
  send2.InitializeKey(k2);
  recv2.InitializeKey(k1);
  return {crypto::SecureChannel(send, recv, o), crypto::SecureChannel(send2, recv2, o)};
}

TEST_CASE(
    "Frames sealed in parallel equal frames sealed in order, and a flipped bit, a swap and a replay are "
    "refused, on either cipher") {
  crypto::EnsureSodium();
  std::vector<crypto::Cipher> ciphers = {crypto::Cipher::kChaChaPoly};
  if (crypto::AesGcmAvailable()) ciphers.push_back(crypto::Cipher::kAesGcm);
  for (crypto::Cipher cipher : ciphers) {
    CAPTURE(crypto::CipherName(cipher));
    crypto::ChannelOptions o;
    o.rekey_interval = 16;  // rekeys fall inside parallel jobs
    const std::size_t kFrames = 200;
    std::vector<crypto::Bytes> plain(kFrames);
    for (std::size_t i = 0; i < kFrames; ++i) {
      plain[i].resize(1 + (i * 7919) % o.max_plaintext);
      randombytes_buf(plain[i].data(), plain[i].size());
    }
    // Reference: Seal one after another on one thread.
    auto [ref, ref_peer] = Pair(o, cipher);
    std::vector<crypto::Bytes> expected(kFrames);
    for (std::size_t i = 0; i < kFrames; ++i) REQUIRE(ref.Seal(plain[i], &expected[i]).ok());
    // Parallel: slots taken in order, sealed on 3 workers + the caller, in jobs of 8.
    auto [par, par_peer] = Pair(o, cipher);
    ThreadPool workers(4);  // 3 workers and the caller, as a Transport with crypto_threads = 3
    std::vector<crypto::Bytes> sealed(kFrames);
    for (std::size_t first = 0; first < kFrames; first += 8) {
      const std::size_t n = std::min<std::size_t>(8, kFrames - first);
      std::vector<crypto::AeadSlot> slots;
      for (std::size_t i = first; i < first + n; ++i) {
        auto slot = par.TakeSealSlot(plain[i].size());
        REQUIRE(slot.ok());
        slots.push_back(*slot);
        sealed[i].resize(plain[i].size() + crypto::kTagSize);
      }
      workers.ParallelFor(n, 1, [&](std::size_t k, std::size_t) {
        const std::size_t i = first + k;
        const crypto::ByteSpan parts[] = {crypto::ByteSpan(plain[i]).first(1),
                                          crypto::ByteSpan(plain[i]).subspan(1)};
        slots[k].SealGather(parts, sealed[i].data());
      });
    }
    for (std::size_t i = 0; i < kFrames; ++i) {
      CAPTURE(i);
      REQUIRE(sealed[i] == expected[i]);
    }
    // In order, they open.
    for (std::size_t i = 0; i < kFrames; ++i) {
      crypto::Bytes out;
      REQUIRE(par_peer.Open(sealed[i], &out).ok());
      CHECK(out == plain[i]);
    }
    // A flipped bit in frame 57: the 57 before it open, it and everything after fail.
    {
      auto [unused, rx] = Pair(o, cipher);
      auto tampered = sealed;
      tampered[57][100 % tampered[57].size()] ^= 0x10;
      for (std::size_t i = 0; i < 60; ++i) {
        CAPTURE(i);
        crypto::Bytes out;
        const Status s = rx.Open(tampered[i], &out);
        CHECK(s.ok() == (i < 57));
        if (i == 57) CHECK(s.code() == StatusCode::kUnauthenticated);
      }
    }
    // Two frames swapped, and a replay, fail.
    {
      auto [unused, rx] = Pair(o, cipher);
      crypto::Bytes out;
      CHECK(rx.Open(sealed[1], &out).code() == StatusCode::kUnauthenticated);
    }
    {
      auto [unused, rx] = Pair(o, cipher);
      crypto::Bytes out;
      REQUIRE(rx.Open(sealed[0], &out).ok());
      CHECK(rx.Open(sealed[0], &out).code() == StatusCode::kUnauthenticated);
    }
  }
}

std::shared_ptr<const gossip::GossipMessage> Model(std::uint64_t round, std::size_t n) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i)
    v[i] = static_cast<float>(round) * 0.5f + 0.001f * static_cast<float>(i % 991);
  compression::ValueCoding f32;
  auto u = std::make_shared<const compression::Update>(
      compression::Update::Dense(n, compression::PackValues(v, {}, f32, 0)));
  return std::make_shared<gossip::GossipMessage>(gossip::Channel::kModel, round, 0.25, u);
}

TEST_CASE(
    "Transports sealing on 3 workers, rekeying every 5 frames, deliver 40 chunked messages each way in "
    "order, on either cipher") {
  auto coordinator = Seeded(100);
  for (bool aes : {true, false}) {
    CAPTURE(aes);
    TransportOptions o;
    o.crypto_threads = 3;
    o.channel.rekey_interval = 5;
    o.write_batch_bytes = 512 * 1024;  // up to 9 frames sealed together
    crypto::TrustPolicy policy = Policy(coordinator);
    policy.allow_aes_gcm = aes;
    Endpoint a(1, Creds(coordinator, 1), policy, o);
    Endpoint b(2, Creds(coordinator, 2), policy, o);
    REQUIRE(a.start_status().ok());
    REQUIRE(b.start_status().ok());
    a.AddPeer({2, "127.0.0.1", b.port(), Seeded(2).public_key()});
    b.AddPeer({1, "127.0.0.1", a.port(), Seeded(1).public_key()});
    const std::size_t kMessages = 40;
    auto size = [](std::size_t r) { return 1 + (r * 37'813) % 200'000; };  // floats: up to 800 KB, 13 frames
    for (std::size_t r = 0; r < kMessages; ++r) {
      a.Send(2, Model(r, size(r)));
      b.Send(1, Model(1000 + r, size(r)));
    }
    REQUIRE(WaitFor([&] { return a.sink().Count() == kMessages && b.sink().Count() == kMessages; },
                    std::chrono::seconds(30)));
    for (auto* e : {&a, &b}) {
      const auto got = e->sink().Got();
      const std::uint64_t base = e == &a ? 1000 : 0;
      for (std::size_t r = 0; r < kMessages; ++r) {
        CAPTURE(r);
        const auto& m = dynamic_cast<const gossip::GossipMessage&>(*got[r].second);
        REQUIRE(m.round() == base + r);
        CHECK(m.update().ToDense() == Model(base + r, size(r))->update().ToDense());
      }
      CHECK(e->transport().stats().frames_rejected == 0);
      CHECK(e->transport().stats().send_queue_drops == 0);
      CHECK(e->transport().stats().sessions_aes_gcm == (aes && crypto::AesGcmAvailable() ? 1u : 0u));
    }
  }
}

}  // namespace
}  // namespace murmur::node
