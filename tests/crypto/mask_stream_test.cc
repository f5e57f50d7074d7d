// Mask expansion: the ChaCha20 keystream read through ExpandMask /
// ChaCha20Words must match RFC 8439 (appendix A.1 test vectors 1 and 2, and
// the section 2.4.2 encryption example), whatever the chunking.
#include <doctest/doctest.h>

#include <cstring>
#include <string>
#include <vector>

#include "crypto/bytes.h"
#include "crypto/mask_stream.h"

namespace murmur::crypto {
namespace {

std::string WordsHex(const std::vector<std::uint32_t>& w) {
  Bytes b;
  for (std::uint32_t v : w) AppendU32(&b, v);
  return ToHex(b);
}

TEST_CASE("ExpandMask of the zero key is RFC 8439 A.1 test vectors 1 and 2 (blocks 0 and 1)") {
  std::vector<std::uint32_t> w(32);
  ExpandMask(MaskSeed{}, w);
  CHECK(WordsHex(w) ==
        "76b8e0ada0f13d90405d6ae55386bd28bdd219b8a08ded1aa836efcc8b770dc7"
        "da41597c5157488d7724e03fb8d84a376a43b8f41518a11cc387b669b2ee6586"
        "9f07e7be5551387a98ba977c732d080dcb0f29a048e3656912c6533e32ee7aed"
        "29b721769ce64e43d57133b074d839d531ed1f28510afb45ace10a1f4b794d6f");
  CHECK(w[0] == 0xade0b876u);  // little-endian words
}

TEST_CASE("ChaCha20Words from block 1 encrypts RFC 8439 section 2.4.2's sunscreen text") {
  MaskSeed key{};
  for (int i = 0; i < 32; ++i) key[i] = static_cast<std::uint8_t>(i);
  ChaChaNonce nonce{};
  nonce[7] = 0x4a;
  const std::string text =
      "Ladies and Gentlemen of the class of '99: If I could offer you only one tip for the future, "
      "sunscreen would be it.";
  std::vector<std::uint32_t> w((text.size() + 3) / 4);
  ChaCha20Words(key, nonce, 16, w);  // word 16 is the start of block 1
  Bytes cipher(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    cipher[i] = static_cast<std::uint8_t>(text[i]) ^ static_cast<std::uint8_t>(w[i / 4] >> (8 * (i % 4)));
  }
  CHECK(ToHex(cipher) ==
        "6e2e359a2568f98041ba0728dd0d6981e97e7aec1d4360c20a27afccfd9fae0bf91b65c5524733ab8f593dabcd62b357"
        "1639d624e65152ab8f530c359f0861d807ca0dbf500d6a6156a38e088a22b65e52bc514d16ccf806818ce91ab7793736"
        "5af90bbf74a35be6b40b8eedf2785e42874d");
}

TEST_CASE("ChaCha20Words at any offset and length agrees with one long expansion") {
  MaskSeed key{};
  key[3] = 7;
  std::vector<std::uint32_t> all(20000);
  ExpandMask(key, all);
  for (std::uint64_t first : {0ull, 1ull, 15ull, 16ull, 4095ull, 4097ull, 9000ull}) {
    for (std::size_t n : {1u, 17u, 4096u, 8191u}) {
      CAPTURE(first);
      CAPTURE(n);
      std::vector<std::uint32_t> part(n);
      ChaCha20Words(key, ChaChaNonce{}, first, part);
      CHECK(std::memcmp(part.data(), all.data() + first, n * 4) == 0);
    }
  }
}

TEST_CASE("AddMask then subtracting it again restores the vector, the sum is modulo 2^32") {
  MaskSeed key{};
  key[0] = 1;
  std::vector<std::uint32_t> x(10000), mask(10000);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<std::uint32_t>(i * 2654435761u);
  const auto orig = x;
  ExpandMask(key, mask);
  AddMask(key, false, x);
  for (std::size_t i = 0; i < x.size(); ++i) REQUIRE(x[i] == static_cast<std::uint32_t>(orig[i] + mask[i]));
  AddMask(key, true, x);
  CHECK(x == orig);
}

}  // namespace
}  // namespace murmur::crypto
