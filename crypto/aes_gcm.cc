#include "crypto/aes_gcm.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include <cstring>

#include "core/check.h"

#if defined(__aarch64__)
#include <asm/hwcap.h>
#include <sys/auxv.h>
#endif

namespace murmur::crypto::aes_gcm {
namespace {

// The cipher, fetched from the default provider once for the process
// (EVP_aes_256_gcm() would fetch it again at every keyed initialisation).
const EVP_CIPHER* Cipher() {
  static EVP_CIPHER* const cipher = EVP_CIPHER_fetch(nullptr, "AES-256-GCM", nullptr);
  MURMUR_CHECK(cipher != nullptr);
  return cipher;
}

// One thread's keyed context for one direction: re-keyed only when a
// message under another key comes.
class CachedContext {
 public:
  explicit CachedContext(bool encrypt) : encrypt_(encrypt), ctx_(EVP_CIPHER_CTX_new()) {
    MURMUR_CHECK(ctx_ != nullptr);
  }
  ~CachedContext() {
    EVP_CIPHER_CTX_free(ctx_);  // cleanses the key schedule
    OPENSSL_cleanse(key_.data(), key_.size());
  }
  CachedContext(const CachedContext&) = delete;
  CachedContext& operator=(const CachedContext&) = delete;

  // The context, keyed with `key` and set to `nonce`, ready for a message.
  EVP_CIPHER_CTX* Start(const Key& key, const Nonce& nonce) {
    const bool rekey = !keyed_ || CRYPTO_memcmp(key_.data(), key.data(), kKeySize) != 0;
    const int ok = rekey ? EVP_CipherInit_ex(ctx_, Cipher(), nullptr, key.data(), nonce.data(), encrypt_)
                         : EVP_CipherInit_ex(ctx_, nullptr, nullptr, nullptr, nonce.data(), encrypt_);
    MURMUR_CHECK(ok == 1);
    if (rekey) {
      key_ = key;
      keyed_ = true;
    }
    return ctx_;
  }

 private:
  const int encrypt_;
  EVP_CIPHER_CTX* const ctx_;
  Key key_{};
  bool keyed_ = false;
};

CachedContext& Sealer() {
  thread_local CachedContext context(true);
  return context;
}

CachedContext& Opener() {
  thread_local CachedContext context(false);
  return context;
}

// OpenStream's context, and whether an OpenStream of this thread holds it.
CachedContext& Streamer() {
  thread_local CachedContext context(false);
  return context;
}
thread_local bool stream_open = false;

// Feeds [in, in + n) through the context into out (out == nullptr: as
// associated data), in pieces that fit EVP's int lengths.
void Update(EVP_CIPHER_CTX* ctx, const std::uint8_t* in, std::size_t n, std::uint8_t* out) {
  constexpr std::size_t kPiece = std::size_t{1} << 30;
  while (n > 0) {
    const std::size_t piece = n < kPiece ? n : kPiece;
    int written = 0;
    MURMUR_CHECK(EVP_CipherUpdate(ctx, out, &written, in, static_cast<int>(piece)) == 1);
    MURMUR_CHECK(static_cast<std::size_t>(written) == piece);
    in += piece;
    if (out != nullptr) out += piece;
    n -= piece;
  }
}

}  // namespace

bool HardwareAvailable() {
#if defined(__x86_64__)
  static const bool available = [] {
    __builtin_cpu_init();  // in case this runs before libgcc's own constructor
    return __builtin_cpu_supports("aes") && __builtin_cpu_supports("pclmul");
  }();
  return available;
#elif defined(__aarch64__)
  static const bool available = [] {
    const unsigned long caps = getauxval(AT_HWCAP);
    return (caps & HWCAP_AES) != 0 && (caps & HWCAP_PMULL) != 0;
  }();
  return available;
#else
  return false;
#endif
}

void Seal(const Key& key, const Nonce& nonce, ByteSpan ad, std::span<const ByteSpan> parts, std::uint8_t* out,
          std::uint8_t* tag) {
  EVP_CIPHER_CTX* ctx = Sealer().Start(key, nonce);
  if (!ad.empty()) Update(ctx, ad.data(), ad.size(), nullptr);
  std::size_t at = 0;
  for (ByteSpan part : parts) {
    if (part.empty()) continue;
    Update(ctx, part.data(), part.size(), out + at);
    at += part.size();
  }
  int written = 0;
  MURMUR_CHECK(EVP_CipherFinal_ex(ctx, out + at, &written) == 1 && written == 0);
  MURMUR_CHECK(EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_GET_TAG, static_cast<int>(kTagSize), tag) == 1);
}

namespace {
// Whether `tag` is the tag of what went through ctx (EVP_CTRL_GCM_SET_TAG
// takes a non-const pointer and only reads it; the final call writes nothing).
bool CheckTag(EVP_CIPHER_CTX* ctx, const std::uint8_t* tag) {
  std::uint8_t expected[kTagSize];
  std::memcpy(expected, tag, kTagSize);
  MURMUR_CHECK(EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_TAG, static_cast<int>(kTagSize), expected) == 1);
  std::uint8_t none[kTagSize];
  int written = 0;
  return EVP_CipherFinal_ex(ctx, none, &written) == 1;
}
}  // namespace

bool Open(const Key& key, const Nonce& nonce, ByteSpan ad, const std::uint8_t* c, std::size_t clen,
          const std::uint8_t* tag, std::uint8_t* m) {
  EVP_CIPHER_CTX* ctx = Opener().Start(key, nonce);
  if (!ad.empty()) Update(ctx, ad.data(), ad.size(), nullptr);
  if (clen > 0) Update(ctx, c, clen, m);
  return CheckTag(ctx, tag);
}

OpenStream::OpenStream(const Key& key, const Nonce& nonce) {
  MURMUR_CHECK(!stream_open);  // one stream per thread at a time
  stream_open = true;
  ctx_ = Streamer().Start(key, nonce);
}

OpenStream::~OpenStream() {
  if (!finished_) stream_open = false;
}

void OpenStream::Update(const std::uint8_t* c, std::size_t n, std::uint8_t* m) {
  MURMUR_CHECK(!finished_);
  if (n > 0) aes_gcm::Update(ctx_, c, n, m);
}

bool OpenStream::Finish(const std::uint8_t* tag) {
  MURMUR_CHECK(!finished_);
  finished_ = true;
  const bool authentic = CheckTag(ctx_, tag);
  stream_open = false;  // the context is free for the thread's next stream
  return authentic;
}

}  // namespace murmur::crypto::aes_gcm
