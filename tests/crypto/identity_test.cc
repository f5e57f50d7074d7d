// Identity key files: round trip, atomic write permissions, and every way a
// file can be wrong. Ed25519 itself is checked against RFC 8032 test 1.
#include <doctest/doctest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "crypto/file_io.h"
#include "crypto/identity.h"

namespace murmur::crypto {
namespace {

std::string TempDir() {
  std::string tmpl = std::filesystem::temp_directory_path().string() + "/murmur_crypto_XXXXXX";
  REQUIRE(::mkdtemp(tmpl.data()) != nullptr);
  return tmpl;
}

void WriteText(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

TEST_CASE("Ed25519 from a seed matches RFC 8032 section 7.1 test 1") {
  auto seed = FromHexFixed<32>("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60", "seed");
  REQUIRE(seed.ok());
  Identity id = Identity::FromSeed(*seed);
  CHECK(id.PublicKeyHex() == "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a");
  Signature sig = id.Sign({});
  CHECK(ToHex(sig) ==
        "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25b"
        "f5f0595bbe24655141438e7a100b");
  CHECK(VerifySignature(id.public_key(), {}, sig));
  sig[0] ^= 1;
  CHECK_FALSE(VerifySignature(id.public_key(), {}, sig));
}

TEST_CASE("identity files round trip, the secret key is 0600, and overwrite is refused") {
  std::string dir = TempDir();
  Identity id = Identity::Generate();
  REQUIRE(id.Save(dir).ok());
  auto mode = FilePermissions(dir + "/identity.key");
  REQUIRE(mode.ok());
  CHECK(*mode == 0600);
  auto loaded = Identity::LoadKeyFile(dir + "/identity.key");
  REQUIRE(loaded.ok());
  CHECK(loaded->public_key() == id.public_key());
  auto pub = LoadPublicKeyFile(dir + "/identity.pub");
  REQUIRE(pub.ok());
  CHECK(*pub == id.public_key());
  CHECK(id.Save(dir).code() == StatusCode::kAlreadyExists);
  CHECK(Identity::Generate().Save(dir, /*overwrite=*/true).ok());
  std::filesystem::remove_all(dir);
}

TEST_CASE("loading a bad identity file returns a Status naming the problem") {
  std::string dir = TempDir();
  std::string key = dir + "/identity.key";
  Identity id = Identity::Generate();
  const std::string good = id.SecretKeyText();

  CHECK(Identity::LoadKeyFile(dir + "/missing.key").status().code() == StatusCode::kNotFound);

  WriteText(key, good.substr(0, good.size() - 10));  // truncated seed
  auto truncated = Identity::LoadKeyFile(key);
  CHECK(truncated.status().code() == StatusCode::kInvalidArgument);
  CHECK(truncated.status().message().find("64 hex digits") != std::string::npos);

  WriteText(key, "murmur-ed25519-public-key v1\n" + std::string(64, 'a') + "\n");  // wrong header
  CHECK(Identity::LoadKeyFile(key).status().code() == StatusCode::kInvalidArgument);

  std::string bad_digit = good;
  bad_digit[bad_digit.size() - 5] = 'g';
  WriteText(key, bad_digit);
  CHECK(Identity::LoadKeyFile(key).status().code() == StatusCode::kInvalidArgument);

  WriteText(key, good + "extra\n");
  CHECK(Identity::LoadKeyFile(key).status().code() == StatusCode::kInvalidArgument);

  WriteText(key, std::string(5000, 'x'));  // refused by size before it is read
  CHECK(Identity::LoadKeyFile(key).status().code() == StatusCode::kResourceExhausted);

  CHECK(Identity::LoadKeyFile(dir).status().code() == StatusCode::kInvalidArgument);  // a directory

  // A .pub beside the key that belongs to someone else.
  WriteText(key, good);
  WriteText(dir + "/identity.pub", Identity::Generate().PublicKeyText());
  CHECK(Identity::LoadKeyFile(key).status().code() == StatusCode::kDataLoss);
  std::filesystem::remove(dir + "/identity.pub");
  CHECK(Identity::LoadKeyFile(key).ok());

  CHECK(ParsePublicKeyText(id.PublicKeyHex()).ok());
  CHECK(ParsePublicKeyText(id.PublicKeyHex().substr(2)).status().code() == StatusCode::kInvalidArgument);
  std::filesystem::remove_all(dir);
}

TEST_CASE("WriteFileAtomic replaces the file whole and leaves no temporary behind") {
  std::string dir = TempDir();
  std::string path = dir + "/f";
  REQUIRE(WriteFileAtomic(path, AsBytes("first"), 0644).ok());
  REQUIRE(WriteFileAtomic(path, AsBytes("second, longer"), 0600).ok());
  auto text = ReadSmallFile(path, 100);
  REQUIRE(text.ok());
  CHECK(*text == "second, longer");
  CHECK(*FilePermissions(path) == 0600);
  int entries = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir)) ++entries;
  CHECK(entries == 1);
  CHECK(WriteFileAtomic(dir + "/no/such/dir/f", AsBytes("x"), 0600).code() == StatusCode::kUnavailable);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace murmur::crypto
