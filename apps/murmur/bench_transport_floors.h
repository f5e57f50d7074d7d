// The floors `murmur bench transport` compares the transport with, measured
// in the same run with the same threading (one io thread per side):
//   - raw TCP: plain Asio sockets on loopback moving messages of the same size;
//   - AEAD: the transport's own seal of the session's cipher (libsodium's
//     ChaCha20-Poly1305 or libcrypto's AES-256-GCM) on one core, at the transport's largest plaintext (65519
//     bytes, one frame);
// and the CPU clocks the benchmark reads (per thread and for the process).
#pragma once

#include <pthread.h>

#include <chrono>
#include <cstdint>
#include <ctime>
#include <future>
#include <thread>

#include "core/status.h"
#include "crypto/bytes.h"
#include "crypto/cipher_state.h"
#include "crypto/handshake.h"
#include "node/transport/asio.h"

namespace murmur::cli {

// One io_context on its own thread, as a daemon runs its node.
class IoThread {
 public:
  IoThread() : work_(asio::make_work_guard(io_)) {}
  ~IoThread() { Join(); }
  void Run() {
    thread_ = std::thread([this] { io_.run(); });
  }
  void Join() {
    if (!thread_.joinable()) return;
    work_.reset();
    io_.stop();
    thread_.join();
  }
  // Runs `fn` on the io thread and waits for it.
  template <typename Fn>
  void Do(Fn fn) {
    std::promise<void> done;
    asio::post(io_, [&] {
      fn();
      done.set_value();
    });
    done.get_future().wait();
  }
  asio::io_context& io() { return io_; }
  // CPU seconds the io thread has used (0 before Run).
  double CpuSeconds() {
    if (!thread_.joinable()) return 0;
    clockid_t clock;
    timespec t{};
    if (pthread_getcpuclockid(thread_.native_handle(), &clock) != 0 || clock_gettime(clock, &t) != 0)
      return 0;
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) / 1e9;
  }

 private:
  asio::io_context io_;
  asio::executor_work_guard<asio::io_context::executor_type> work_;
  std::thread thread_;
};

// A fresh identity and its certificate from `coordinator` on network
// "bench", node id `serial`, with `roles` (crypto::kRoleNode, kRoleOperator),
// valid for the next hour.
Result<crypto::Credentials> MakeBenchCredentials(const crypto::Identity& coordinator, std::uint32_t serial,
                                                 std::uint8_t roles);

// CPU seconds (user + system) of every thread of this process so far.
double ProcessCpuSeconds();
// CPU seconds of the calling thread so far.
double ThreadCpuSeconds();

struct AeadRate {
  double wall = 0;  // MB per wall-clock second
  double cpu = 0;   // MB per second of this thread's CPU time
};

// MB/s of the transport's `cipher` AEAD sealing `plaintext`-byte messages in place.
// REQUIRES: crypto::AesGcmAvailable() for AES-GCM.
AeadRate AeadSealRate(std::size_t plaintext, double seconds, crypto::Cipher cipher);

// Wall-clock seconds of one exchange, the CPU seconds each side's io thread
// used, and those of the whole process (io threads, crypto workers, kernel).
struct Timing {
  double seconds = 0;
  double cpu[2] = {0, 0};
  double process = 0;
};

// Loopback TCP between two io threads: `total` bytes from A to B (and as
// many from B to A when `both_ways`), in writes of `message`.
Timing RawTcp(const crypto::Bytes& message, std::uint64_t total, bool both_ways);

}  // namespace murmur::cli
