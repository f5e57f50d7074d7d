#include "apps/murmur/bench_transport_floors.h"

#include <pthread.h>
#include <sodium.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <stdexcept>
#include <vector>

#include "apps/murmur/bench.h"
#include "crypto/bytes.h"
#include "crypto/certificate.h"

namespace murmur::cli {
namespace {

// One end of a raw TCP connection: writes `to_send` bytes in `message`-byte
// writes and reads until `to_receive` bytes have arrived, then sets `done`.
class RawEnd {
 public:
  RawEnd(asio::ip::tcp::socket socket, const crypto::Bytes& message, std::uint64_t to_send,
         std::uint64_t to_receive)
      : socket_(std::move(socket)), message_(message), to_send_(to_send), to_receive_(to_receive) {}
  std::future<void> Start() {
    asio::error_code ec;
    socket_.set_option(asio::ip::tcp::no_delay(true), ec);
    Write();
    Read();
    MaybeDone();
    return done_.get_future();
  }

 private:
  void Write() {
    if (sent_ >= to_send_) return;
    const std::size_t n = std::min<std::uint64_t>(message_.size(), to_send_ - sent_);
    asio::async_write(socket_, asio::buffer(message_.data(), n),
                      [this](const asio::error_code& ec, std::size_t k) {
                        if (ec) return Fail();
                        sent_ += k;
                        if (sent_ >= to_send_) return MaybeDone();
                        Write();
                      });
  }
  void Read() {
    if (received_ >= to_receive_) return;
    socket_.async_read_some(asio::buffer(buffer_), [this](const asio::error_code& ec, std::size_t k) {
      if (ec) return Fail();
      received_ += k;
      if (received_ >= to_receive_) return MaybeDone();
      Read();
    });
  }
  void MaybeDone() {
    if (!finished_ && sent_ >= to_send_ && received_ >= to_receive_) {
      finished_ = true;
      done_.set_value();
    }
  }
  void Fail() {
    if (finished_) return;
    finished_ = true;
    done_.set_exception(std::make_exception_ptr(std::runtime_error("raw TCP connection failed")));
  }

  asio::ip::tcp::socket socket_;
  const crypto::Bytes& message_;
  std::uint64_t to_send_, to_receive_;
  std::uint64_t sent_ = 0, received_ = 0;
  std::vector<std::uint8_t> buffer_ = std::vector<std::uint8_t>(256 * 1024);
  std::promise<void> done_;
  bool finished_ = false;
};

}  // namespace

// CPU seconds (user + system) of every thread of this process so far.
Result<crypto::Credentials> MakeBenchCredentials(const crypto::Identity& coordinator, std::uint32_t serial,
                                                 std::uint8_t roles) {
  crypto::Identity id = crypto::Identity::Generate();
  crypto::Certificate c;
  c.node_key = id.public_key();
  c.node_id = serial;
  c.network_id = "bench";
  c.roles = roles;
  c.serial = serial;
  const auto now =
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
          .count();
  c.not_before = now - 60;
  c.not_after = now + 3600;
  MURMUR_RETURN_IF_ERROR(crypto::SignCertificate(coordinator, &c));
  return crypto::Credentials::Make(id, c);
}

double ProcessCpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

double ThreadCpuSeconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) / 1e9;
}

// MB/s of the cipher's AEAD (crypto::AeadSealDetached, what the transport
// runs: libsodium's ChaCha20-Poly1305, libcrypto's AES-256-GCM) sealing
// `plaintext`-byte messages in place.
AeadRate AeadSealRate(std::size_t plaintext, double seconds, crypto::Cipher cipher) {
  crypto::EnsureSodium();
  MURMUR_CHECK(cipher != crypto::Cipher::kAesGcm || crypto::AesGcmAvailable());
  std::vector<std::uint8_t> buf(plaintext + crypto::kTagSize);
  randombytes_buf(buf.data(), buf.size());
  crypto::CipherKey key;
  randombytes_buf(key.data(), key.size());
  auto start = std::chrono::steady_clock::now();
  const double cpu_start = ThreadCpuSeconds();
  std::uint64_t n = 0;
  while (SecondsSince(start) < seconds) {
    for (int i = 0; i < 64; ++i, ++n) {
      crypto::AeadSealDetached(cipher, key, n, {}, buf.data(), plaintext, buf.data(), buf.data() + plaintext);
    }
  }
  const double mb = static_cast<double>(n * plaintext) / 1e6;
  return {mb / SecondsSince(start), mb / (ThreadCpuSeconds() - cpu_start)};
}

// Loopback TCP between two io threads: `total` bytes from A to B (and as
// many from B to A when `both_ways`).
Timing RawTcp(const crypto::Bytes& message, std::uint64_t total, bool both_ways) {
  IoThread a, b;
  asio::ip::tcp::acceptor acceptor(b.io(), {asio::ip::make_address("127.0.0.1"), 0});
  asio::ip::tcp::socket sa(a.io()), sb(b.io());
  sa.connect(acceptor.local_endpoint());
  acceptor.accept(sb);
  RawEnd end_a(std::move(sa), message, total, both_ways ? total : 0);
  RawEnd end_b(std::move(sb), message, both_ways ? total : 0, total);
  std::future<void> done_a, done_b;
  a.Run();
  b.Run();
  Timing t;
  t.cpu[0] = -a.CpuSeconds();
  t.cpu[1] = -b.CpuSeconds();
  t.process = -ProcessCpuSeconds();
  auto start = std::chrono::steady_clock::now();
  a.Do([&] { done_a = end_a.Start(); });
  b.Do([&] { done_b = end_b.Start(); });
  done_a.get();
  done_b.get();
  t.seconds = SecondsSince(start);
  t.cpu[0] += a.CpuSeconds();
  t.cpu[1] += b.CpuSeconds();
  t.process += ProcessCpuSeconds();
  a.Join();
  b.Join();
  return t;
}

}  // namespace murmur::cli
