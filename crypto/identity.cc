#include "crypto/identity.h"

#include <sodium.h>

#include "core/log.h"
#include "crypto/file_io.h"

namespace murmur::crypto {
namespace {

constexpr std::string_view kSecretHeader = "murmur-ed25519-secret-key v1";
constexpr std::string_view kPublicHeader = "murmur-ed25519-public-key v1";
constexpr std::size_t kMaxKeyFileBytes = 4096;

// Splits "header\nhex\n" (the final newline optional) and checks the header.
Result<std::string_view> HexLine(std::string_view text, std::string_view header, std::string_view what) {
  std::size_t nl = text.find('\n');
  if (nl == std::string_view::npos || text.substr(0, nl) != header)
    return Status::InvalidArgument(std::string(what) + ": first line is not '" + std::string(header) + "'");
  std::string_view rest = text.substr(nl + 1);
  if (!rest.empty() && rest.back() == '\n') rest.remove_suffix(1);
  if (rest.find('\n') != std::string_view::npos)
    return Status::InvalidArgument(std::string(what) + ": trailing lines after the key");
  return rest;
}

std::string PubPathBeside(const std::string& key_path) {
  std::size_t slash = key_path.find_last_of('/');
  std::string dir = slash == std::string::npos ? "." : key_path.substr(0, slash);
  return dir + "/" + kIdentityPubFile;
}

}  // namespace

Identity Identity::Generate() {
  EnsureSodium();
  std::array<std::uint8_t, kSignSeedSize> seed{};
  randombytes_buf(seed.data(), seed.size());
  Identity id = FromSeed(seed);
  sodium_memzero(seed.data(), seed.size());
  return id;
}

Identity Identity::FromSeed(const std::array<std::uint8_t, kSignSeedSize>& seed) {
  EnsureSodium();
  Identity id;
  id.seed_ = seed;
  MURMUR_CHECK(crypto_sign_seed_keypair(id.public_key_.data(), id.secret_key_.data(), seed.data()) == 0);
  return id;
}

Signature Identity::Sign(ByteSpan message) const {
  Signature sig{};
  MURMUR_CHECK(
      crypto_sign_detached(sig.data(), nullptr, message.data(), message.size(), secret_key_.data()) == 0);
  return sig;
}

bool VerifySignature(const SignPublicKey& key, ByteSpan message, const Signature& signature) {
  EnsureSodium();
  return crypto_sign_verify_detached(signature.data(), message.data(), message.size(), key.data()) == 0;
}

std::string Identity::SecretKeyText() const {
  return std::string(kSecretHeader) + "\n" + ToHex(seed_) + "\n";
}
std::string Identity::PublicKeyText() const {
  return std::string(kPublicHeader) + "\n" + ToHex(public_key_) + "\n";
}

Status Identity::Save(const std::string& dir, bool overwrite) const {
  std::string key_path = dir + "/" + kIdentityKeyFile;
  if (!overwrite && FilePermissions(key_path).ok())
    return Status::AlreadyExists(key_path + " exists; refusing to overwrite an identity");
  std::string secret = SecretKeyText();
  Status s = WriteFileAtomic(key_path, AsBytes(secret), 0600);
  sodium_memzero(secret.data(), secret.size());
  MURMUR_RETURN_IF_ERROR(s);
  return WriteFileAtomic(dir + "/" + kIdentityPubFile, AsBytes(PublicKeyText()), 0644);
}

Result<Identity> Identity::LoadKeyFile(const std::string& key_path) {
  MURMUR_ASSIGN_OR_RETURN(std::string text, ReadSmallFile(key_path, kMaxKeyFileBytes));
  auto hex = HexLine(text, kSecretHeader, key_path);
  if (!hex.ok()) {
    sodium_memzero(text.data(), text.size());
    return hex.status();
  }
  auto seed = FromHexFixed<kSignSeedSize>(*hex, key_path + ": seed");
  sodium_memzero(text.data(), text.size());
  if (!seed.ok()) return seed.status();
  Identity id = FromSeed(*seed);
  sodium_memzero(seed->data(), seed->size());

  auto mode = FilePermissions(key_path);
  if (mode.ok() && (*mode & 077) != 0)
    MURMUR_LOG(kWarning) << key_path << " is readable by group or others (mode 0" << std::oct << *mode
                         << std::dec << "); chmod 600 it";
  std::string pub_path = PubPathBeside(key_path);
  if (FilePermissions(pub_path).ok()) {
    MURMUR_ASSIGN_OR_RETURN(SignPublicKey pub, LoadPublicKeyFile(pub_path));
    if (pub != id.public_key())
      return Status::DataLoss(pub_path + " does not match the public key of " + key_path);
  }
  return id;
}

Result<SignPublicKey> ParsePublicKeyText(std::string_view text) {
  std::string_view hex = text;
  if (text.substr(0, kPublicHeader.size()) == kPublicHeader) {
    MURMUR_ASSIGN_OR_RETURN(hex, HexLine(text, kPublicHeader, "public key"));
  } else {
    while (!hex.empty() && (hex.back() == '\n' || hex.back() == ' ')) hex.remove_suffix(1);
  }
  return FromHexFixed<kSignPublicKeySize>(hex, "public key");
}

Result<SignPublicKey> LoadPublicKeyFile(const std::string& path) {
  MURMUR_ASSIGN_OR_RETURN(std::string text, ReadSmallFile(path, kMaxKeyFileBytes));
  auto key = ParsePublicKeyText(text);
  if (!key.ok()) return key.status().WithContext(path);
  return key;
}

Result<SignPublicKey> PublicKeyFromArg(const std::string& text) {
  if (text.size() == 64 && text.find_first_not_of("0123456789abcdefABCDEF") == std::string::npos)
    return ParsePublicKeyText(text);
  return LoadPublicKeyFile(text);
}

}  // namespace murmur::crypto
