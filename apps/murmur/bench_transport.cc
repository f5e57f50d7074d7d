// murmur bench transport: update exchange between two node::Transports on
// loopback (real certificates, Noise XX, AES-256-GCM or ChaCha20-Poly1305
// frames, side by side by default), one way and both ways, next to the two
// floors it cannot beat, measured in the same run with the same threading
// (one io thread per side):
//   - raw TCP: plain Asio sockets on loopback moving messages of the same size;
//   - AEAD: the transport's seal of the session's cipher on one core, at the
//     transport's largest plaintext (65519 bytes, one frame).
// (apps/murmur/bench_transport_floors.h). Both ways, each side both seals and
// opens, so the two cores give at most one core's AEAD rate in total; the
// aggregate rate of the two directions is compared with the same floors. Also
// the CPU per GB of each and the bound it sets on this machine
// (docs/benchmarks.md), and the resident memory of an idle process holding
// one listening Transport and AsioEnv.
#include <sodium.h>

#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <future>
#include <mutex>
#include <string>
#include <thread>

#include "apps/murmur/bench.h"
#include "apps/murmur/bench_transport_floors.h"
#include "apps/murmur/command.h"
#include "core/sysinfo.h"
#include "crypto/handshake.h"
#include "node/transport/asio_env.h"
#include "node/transport/transport.h"

namespace murmur::cli {
namespace {

constexpr const char* kCmd = "bench transport";
constexpr std::uint32_t kKind = 0x10;  // a gossip message's kind; the payload is never decoded here

// The measurements of one cipher's transport in one direction, a value per run.
struct Series {
  std::vector<double> tr, aead, aead_cpu, tr_busy, tr_cpu, tr_proc, tr_side[2];
};

const char* CipherLabel(crypto::Cipher c) {
  return c == crypto::Cipher::kAesGcm ? "AES-256-GCM" : "ChaCha20-Poly1305";
}

// Bytes that arrived, and a wait for a target.
class Arrivals {
 public:
  void Add(std::uint64_t n) {
    std::lock_guard<std::mutex> lock(mu_);
    bytes_ += n;
    cv_.notify_all();
  }
  bool WaitFor(std::uint64_t target, std::chrono::seconds limit) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, limit, [&] { return bytes_ >= target; });
  }
  void Reset() {
    std::lock_guard<std::mutex> lock(mu_);
    bytes_ = 0;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::uint64_t bytes_ = 0;  // guarded by mu_
};

// Two Transports (nodes 1 and 2) on their own io threads, connected.
class TransportPair {
 public:
  static Result<std::unique_ptr<TransportPair>> Make(std::uint64_t max_queue_bytes, int crypto_threads,
                                                     std::size_t write_batch_bytes, crypto::Cipher cipher) {
    auto pair = std::unique_ptr<TransportPair>(new TransportPair());
    crypto::Identity coordinator = crypto::Identity::Generate();
    crypto::TrustPolicy policy{"bench", coordinator.public_key(), crypto::kRoleNode,
                               cipher == crypto::Cipher::kAesGcm};
    for (std::uint32_t i = 0; i < 2; ++i) {
      MURMUR_ASSIGN_OR_RETURN(crypto::Credentials creds,
                              MakeBenchCredentials(coordinator, i + 1, crypto::kRoleNode));
      node::TransportOptions o;
      o.self = i + 1;
      o.max_queue_bytes = max_queue_bytes;
      o.crypto_threads = crypto_threads;
      o.write_batch_bytes = write_batch_bytes;
      Arrivals* arrivals = &pair->arrivals_[i];
      pair->transports_[i] = std::make_unique<node::Transport>(
          pair->io_[i].io(), std::move(creds), policy, o,
          [arrivals](NodeId, node::ReceivedMessage m) { arrivals->Add(m.payload.size()); });
      MURMUR_RETURN_IF_ERROR(pair->transports_[i]->Start());
    }
    for (auto& io : pair->io_) io.Run();
    pair->io_[0].Do([&] {
      pair->transports_[0]->AddPeer({2, "127.0.0.1", pair->transports_[1]->port(), {}});
    });
    pair->io_[1].Do([&] {
      pair->transports_[1]->AddPeer({1, "127.0.0.1", pair->transports_[0]->port(), {}});
    });
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    for (bool up = false; !up;) {
      if (std::chrono::steady_clock::now() > deadline)
        return Status::DeadlineExceeded("no session within 10 s");
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      pair->io_[0].Do([&] { up = pair->transports_[0]->IsConnected(2); });
    }
    const bool aes = pair->transports_[0]->stats().sessions_aes_gcm > 0;
    if (aes != (cipher == crypto::Cipher::kAesGcm))
      return Status::Internal(std::string("the session did not negotiate ") + CipherLabel(cipher));
    return pair;
  }
  ~TransportPair() {
    for (int i = 0; i < 2; ++i) io_[i].Do([&] { transports_[i]->Stop(); });
    for (auto& io : io_) io.Join();
  }

  // Moves `count` messages from node 1 to node 2 (and from 2 to 1 when both_ways).
  Result<Timing> Exchange(const std::shared_ptr<const crypto::Bytes>& payload, std::uint64_t count,
                          bool both_ways) {
    for (auto& a : arrivals_) a.Reset();
    const std::uint64_t target = count * payload->size();
    Timing t;
    for (int i = 0; i < 2; ++i) t.cpu[i] = -io_[i].CpuSeconds();
    t.process = -ProcessCpuSeconds();
    auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < (both_ways ? 2 : 1); ++i) {
      asio::post(io_[i].io(), [this, i, payload, count] {
        for (std::uint64_t k = 0; k < count; ++k) transports_[i]->Send(i == 0 ? 2 : 1, kKind, payload);
      });
    }
    if (!arrivals_[1].WaitFor(target, std::chrono::seconds(120)) ||
        (both_ways && !arrivals_[0].WaitFor(target, std::chrono::seconds(120))))
      return Status::DeadlineExceeded("messages did not all arrive within 120 s");
    t.seconds = SecondsSince(start);
    for (int i = 0; i < 2; ++i) t.cpu[i] += io_[i].CpuSeconds();
    t.process += ProcessCpuSeconds();
    return t;
  }
  const node::TransportStats& stats(int i) const { return transports_[i]->stats(); }

 private:
  TransportPair() = default;
  IoThread io_[2];
  std::unique_ptr<node::Transport> transports_[2];
  Arrivals arrivals_[2];
};

// Resident memory of this process with one listening Transport and an AsioEnv, idle for a while.
Result<std::uint64_t> IdleRss() {
  IoThread io;
  crypto::Identity coordinator = crypto::Identity::Generate();
  MURMUR_ASSIGN_OR_RETURN(crypto::Credentials creds, MakeBenchCredentials(coordinator, 1, crypto::kRoleNode));
  node::AsioEnv env(io.io(), 1, 1);
  node::TransportOptions o;
  o.self = 1;
  node::Transport transport(
      io.io(), std::move(creds), {"bench", coordinator.public_key(), crypto::kRoleNode}, o,
      [&](NodeId from, node::ReceivedMessage m) { env.OnTransportMessage(from, std::move(m)); });
  env.SetTransport(&transport);
  MURMUR_RETURN_IF_ERROR(transport.Start());
  io.Run();
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const std::uint64_t rss = CurrentRssBytes();
  io.Do([&] { transport.Stop(); });
  io.Join();
  return rss;
}

// The 1, 5 and 15 minute load averages, as /proc/loadavg gives them.
std::string LoadAverage() {
  double l[3] = {0, 0, 0};
  if (getloadavg(l, 3) != 3) return "unknown";
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.2f %.2f %.2f", l[0], l[1], l[2]);
  return buf;
}

std::string Join(const std::vector<double>& v) {
  std::string s;
  char buf[32];
  for (double x : v) {
    std::snprintf(buf, sizeof(buf), "%s%.0f", s.empty() ? "" : " ", x);
    s += buf;
  }
  return s;
}

}  // namespace

int BenchTransport(int argc, char** argv) {
  cxxopts::Options options("murmur bench transport",
                           "Update exchange between two Transports on loopback against raw TCP and the "
                           "single-core AEAD rate.");
  // clang-format off
  options.add_options()
    ("megabytes", "MB of updates per direction per run", cxxopts::value<double>()->default_value("100"))
    ("message-bytes", "bytes per update message", cxxopts::value<std::size_t>()->default_value("4000000"))
    ("runs", "runs of each measurement (the median is reported)", cxxopts::value<int>()->default_value("3"))
    ("seconds", "seconds per AEAD measurement", cxxopts::value<double>()->default_value("1"))
    ("write-batch-kib", "TransportOptions::write_batch_bytes of both transports, in KiB",
     cxxopts::value<std::size_t>()->default_value("256"))
    ("crypto-threads", "TransportOptions::crypto_threads of both transports (-1: the default for this machine)",
     cxxopts::value<int>()->default_value("-1"))
    ("cipher", "the sessions' cipher: aesgcm, chachapoly, or both (side by side in one run; aesgcm needs "
     "AES instructions)", cxxopts::value<std::string>()->default_value("both"))
    ("h,help", "show this help");
  // clang-format on
  cxxopts::ParseResult args;
  if (auto exit = ParseFlags(options, argc, argv, kCmd, &args)) return *exit;
  const double megabytes = args["megabytes"].as<double>();
  const std::size_t message_bytes = args["message-bytes"].as<std::size_t>();
  const int runs = args["runs"].as<int>();
  const double seconds = args["seconds"].as<double>();
  const int crypto_threads = args["crypto-threads"].as<int>();
  if (crypto_threads < -1 || crypto_threads > 64)
    return UsageError(kCmd, "--crypto-threads outside [-1, 64]");
  const std::size_t write_batch_kib = args["write-batch-kib"].as<std::size_t>();
  if (write_batch_kib < 1 || write_batch_kib > 65536)
    return UsageError(kCmd, "--write-batch-kib outside [1, 65536]");
  if (!(megabytes > 0 && megabytes <= 100000)) return UsageError(kCmd, "--megabytes outside (0, 100000]");
  if (message_bytes < 1 || message_bytes > (std::size_t{256} << 20))
    return UsageError(kCmd, "--message-bytes outside [1, 268435456] (the transport's message bound)");
  if (runs < 1 || runs > 100) return UsageError(kCmd, "--runs outside [1, 100]");
  if (!(seconds > 0 && seconds <= 600)) return UsageError(kCmd, "--seconds outside (0, 600]");
  const std::string cipher_flag = args["cipher"].as<std::string>();
  std::vector<crypto::Cipher> ciphers;
  if (cipher_flag == "aesgcm" || cipher_flag == "both") ciphers.push_back(crypto::Cipher::kAesGcm);
  if (cipher_flag == "chachapoly" || cipher_flag == "both") ciphers.push_back(crypto::Cipher::kChaChaPoly);
  if (ciphers.empty())
    return UsageError(kCmd, "--cipher '" + cipher_flag + "' is not aesgcm, chachapoly or both");
  if (!crypto::AesGcmAvailable() && ciphers.front() == crypto::Cipher::kAesGcm) {
    if (cipher_flag == "aesgcm")
      return Failure(kCmd, "this CPU has no AES and carry-less multiply instructions");
    std::printf("this CPU has no AES and carry-less multiply instructions: ChaCha20-Poly1305 only\n");
    ciphers.erase(ciphers.begin());
  }
  const auto count = std::max<std::uint64_t>(1, static_cast<std::uint64_t>(megabytes * 1e6 / message_bytes));
  const std::uint64_t total = count * message_bytes;

  auto idle = IdleRss();
  if (!idle.ok()) return Failure(kCmd, idle.status().message());
  std::printf("idle RSS, one listening Transport + AsioEnv in this process: %.1f MB (target < 20 MB)\n",
              static_cast<double>(*idle) / 1e6);

  auto payload = std::make_shared<crypto::Bytes>(message_bytes);
  randombytes_buf(payload->data(), payload->size());
  std::vector<std::unique_ptr<TransportPair>> pairs;
  for (crypto::Cipher c : ciphers) {
    auto pair = TransportPair::Make(2 * total + message_bytes, crypto_threads, write_batch_kib * 1024, c);
    if (!pair.ok()) return Failure(kCmd, pair.status().message());
    // Warm-up: the first message each way (allocator, TCP windows).
    if (auto w = (*pair)->Exchange(payload, 1, true); !w.ok()) return Failure(kCmd, w.status().message());
    pairs.push_back(std::move(*pair));
  }

  const std::size_t frame_plaintext = crypto::ChannelOptions{}.max_plaintext;
  std::printf(
      "%llu messages of %zu bytes (%.1f MB) per direction, %d runs; MB/s are 10^6 bytes of payload "
      "per second\n",
      static_cast<unsigned long long>(count), message_bytes, static_cast<double>(total) / 1e6, runs);
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  const int workers_per_transport =
      crypto_threads >= 0 ? crypto_threads : node::DefaultCryptoThreads(static_cast<int>(cores));
  std::printf("crypto threads per transport: %d; hardware threads: %u; load average at start: %s\n",
              workers_per_transport, cores, LoadAverage().c_str());
  const bool workers = workers_per_transport > 0;
  for (bool both : {false, true}) {
    const double moved = static_cast<double>(both ? 2 * total : total);
    std::vector<double> raw, raw_busy, raw_cpu, raw_proc;
    std::vector<Series> series(ciphers.size());
    for (int r = 0; r < runs; ++r) {
      // Interleaved, so that load from elsewhere on the machine falls on all alike.
      const Timing rt = RawTcp(*payload, total, both);
      raw.push_back(moved / rt.seconds / 1e6);
      raw_busy.push_back(moved / std::max(rt.cpu[0], rt.cpu[1]) / 1e6);
      raw_cpu.push_back((rt.cpu[0] + rt.cpu[1]) / moved * 1e9);
      raw_proc.push_back(rt.process / moved * 1e9);
      for (std::size_t c = 0; c < ciphers.size(); ++c) {
        Series& x = series[c];
        const AeadRate a = AeadSealRate(frame_plaintext, seconds, ciphers[c]);
        x.aead.push_back(a.wall);
        x.aead_cpu.push_back(a.cpu);
        auto t = pairs[c]->Exchange(payload, count, both);
        if (!t.ok()) return Failure(kCmd, t.status().message());
        x.tr.push_back(moved / t->seconds / 1e6);
        x.tr_busy.push_back(moved / std::max(t->cpu[0], t->cpu[1]) / 1e6);
        x.tr_cpu.push_back((t->cpu[0] + t->cpu[1]) / moved * 1e9);
        x.tr_proc.push_back(t->process / moved * 1e9);
        for (int i = 0; i < 2; ++i) x.tr_side[i].push_back(t->cpu[i] / moved * 1e9);
      }
    }
    std::printf("%-10s %-18s %10s %10s %12s %10s %7s\n", "direction", "cipher", "transport", "raw TCP",
                "AEAD 1 core", "floor", "ratio");
    for (std::size_t c = 0; c < ciphers.size(); ++c) {
      const Series& x = series[c];
      const double floor = std::min(Median(raw), Median(x.aead));
      std::printf("%-10s %-18s %10.0f %10.0f %12.0f %10.0f %7.2f   (target >= 0.70)\n",
                  both ? "both ways" : "one way", CipherLabel(ciphers[c]), Median(x.tr), Median(raw),
                  Median(x.aead), floor, Median(x.tr) / floor);
      if (runs > 1) {
        std::printf("  runs: transport %s | raw TCP %s | AEAD %s\n", Join(x.tr).c_str(), Join(raw).c_str(),
                    Join(x.aead).c_str());
      }
      // Load-independent views. Per CPU-second of the busier io thread: the
      // rate each would reach with a core to itself (AEAD: per CPU-second of
      // its thread). And CPU per GB against the least a byte can cost: sealed
      // once, opened once (an AEAD pass each), and moved through loopback TCP.
      // With crypto workers the io threads' clocks miss the workers' share:
      // these two lines are then about the io threads only.
      const char* io_only = workers ? " [io threads only; workers not counted]" : "";
      const double busy_floor = std::min(Median(raw_busy), Median(x.aead_cpu));
      std::printf(
          "  per CPU-second of the busier thread: transport %.0f, raw TCP %.0f, AEAD %.0f MB/s; "
          "ratio %.2f%s\n",
          Median(x.tr_busy), Median(raw_busy), Median(x.aead_cpu), Median(x.tr_busy) / busy_floor, io_only);
      const double least = 2e3 / Median(x.aead_cpu) + Median(raw_cpu);
      std::printf(
          "  CPU s per GB, both threads: transport %.2f; least %.2f (raw TCP %.2f + 2 AEAD passes %.2f): "
          "transport / least %.2f%s\n",
          Median(x.tr_cpu), least, Median(raw_cpu), 2e3 / Median(x.aead_cpu), Median(x.tr_cpu) / least,
          io_only);
      // The physical bound (docs/benchmarks.md): with every core busy and no
      // waiting, `cores` CPU-seconds per second move cores / (CPU-s per MB)
      // MB/s; without crypto workers no io thread can go faster than one core.
      const double proc = Median(x.tr_proc) / 1e3,
                   least_proc = (2e3 / Median(x.aead_cpu) + Median(raw_proc)) / 1e3;
      const double busiest = std::max(Median(x.tr_side[0]), Median(x.tr_side[1])) / 1e3;
      const double bound = workers ? cores / proc : std::min(cores / proc, 1 / busiest);
      std::printf(
          "  CPU s per GB, whole process (getrusage): transport %.2f (io threads: node 1 %.2f, node 2 %.2f), "
          "raw TCP %.2f; least %.2f (raw TCP + 2 AEAD passes): transport / least %.2f (target <= 1.15)\n",
          proc * 1e3, Median(x.tr_side[0]), Median(x.tr_side[1]), Median(raw_proc), least_proc * 1e3,
          proc / least_proc);
      std::printf(
          "  bound on this machine: %u cores / %.2f CPU s per GB = %.0f MB/s%s -> %.0f MB/s = %.2f of the "
          "AEAD "
          "floor; measured %.2f of the bound. Least-cost transport: %.0f MB/s = %.2f of the floor\n",
          cores, proc * 1e3, cores / proc,
          workers ? ""
                  : (", busier io thread alone " + std::to_string(static_cast<int>(1 / busiest)) + " MB/s")
                        .c_str(),
          bound, bound / Median(x.aead_cpu), Median(x.tr) / bound, cores / least_proc,
          cores / least_proc / Median(x.aead_cpu));
    }
    if (ciphers.size() == 2) {
      // Same run, same load: AES-GCM against ChaCha20-Poly1305, per wall-clock second and per CPU-second.
      const Series &aes = series[0], &chacha = series[1];
      std::printf(
          "  AES-256-GCM / ChaCha20-Poly1305: transport %.2f (target >= 1.2), CPU per GB %.2f, AEAD floor "
          "%.2f\n",
          Median(aes.tr) / Median(chacha.tr), Median(aes.tr_proc) / Median(chacha.tr_proc),
          Median(aes.aead_cpu) / Median(chacha.aead_cpu));
    }
  }
  const auto& s = pairs[0]->stats(0);
  std::printf("wire overhead: %.3f%% (bytes sent by node 1 over its payload bytes)\n",
              100.0 * (static_cast<double>(s.bytes_sent) /
                           static_cast<double>(s.messages_sent.load() * message_bytes) -
                       1));
  std::printf("peak RSS of this process: %.1f MB; load average at the end: %s\n",
              static_cast<double>(PeakRssBytes()) / 1e6, LoadAverage().c_str());
  return kExitOk;
}

}  // namespace murmur::cli
