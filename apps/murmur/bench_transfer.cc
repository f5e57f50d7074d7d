// murmur bench transfer: a model file moved as an artifact (docs/daemon.md
// "Artifacts") from the operator to a daemon's artifact store over loopback:
// the operator's OfferArtifact on a ControlSession against a ControlServer
// whose handler is the daemon's store (node/artifacts), each on its own
// thread, as `murmur job submit` and murmurd run them. Printed next to the
// floors it cannot beat, measured in the same run on this machine:
//   - loopback TCP moving the same bytes in writes of one chunk;
//   - the control session's AEAD (seal; opening costs the same) at its
//     frame size (65519 bytes);
//   - BLAKE2b over one chunk at a time;
// and the bound they set together. The operator checks each chunk against
// its digest (BLAKE2b) and seals it; the daemon opens it, checks it
// (BLAKE2b) and writes it, and hashes the whole file once more at the end.
// The operator keeps node::kOfferWindow chunks on their way, so the two
// sides work at once: a byte costs at least the busier side's BLAKE2b and
// AEAD pass, then the final BLAKE2b pass (copies, TCP and the page cache
// taken as free).
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "apps/murmur/bench.h"
#include "apps/murmur/bench_transport_floors.h"
#include "apps/murmur/command.h"
#include "crypto/hmac.h"
#include "node/artifacts/offer.h"
#include "node/artifacts/store.h"
#include "node/control/server.h"

namespace murmur::cli {
namespace {

namespace fs = std::filesystem;
constexpr const char* kCmd = "bench transfer";

// `bytes` of xorshift output at `path`.
Status WriteNoise(const fs::path& path, std::uint64_t bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  std::vector<std::uint64_t> buf(1 << 17);
  std::uint64_t x = 0x9e3779b97f4a7c15ull;
  for (std::uint64_t done = 0; done < bytes;) {
    for (auto& v : buf) {
      x ^= x << 13;
      x ^= x >> 7;
      x ^= x << 17;
      v = x;
    }
    const auto n = static_cast<std::streamsize>(std::min<std::uint64_t>(buf.size() * 8, bytes - done));
    out.write(reinterpret_cast<const char*>(buf.data()), n);
    done += static_cast<std::uint64_t>(n);
  }
  if (!out) return Status::Unavailable("cannot write '" + path.string() + "'");
  return Status::Ok();
}

// MB/s of BLAKE2b over `chunk`-byte pieces, for about `seconds`.
double Blake2bRate(std::size_t chunk, double seconds) {
  std::vector<std::uint8_t> buf(chunk, 0x5a);
  crypto::Blake2bHasher h;
  std::uint64_t bytes = 0;
  const auto start = std::chrono::steady_clock::now();
  while (SecondsSince(start) < seconds) {
    for (int i = 0; i < 8; ++i) h.Update(crypto::ByteSpan(buf.data(), buf.size()));
    bytes += 8 * chunk;
  }
  const double elapsed = SecondsSince(start);
  (void)h.Final();
  return static_cast<double>(bytes) / elapsed / 1e6;
}

int Run(std::uint64_t megabytes, int runs, std::uint32_t chunk) {
  const fs::path dir = fs::temp_directory_path() / ("murmur-bench-transfer-" + std::to_string(::getpid()));
  std::error_code ec;
  fs::remove_all(dir, ec);
  fs::create_directories(dir);
  struct Cleanup {
    fs::path dir;
    ~Cleanup() {
      std::error_code e;
      fs::remove_all(dir, e);
    }
  } cleanup{dir};
  const std::uint64_t bytes = megabytes * 1000000;
  const fs::path file = dir / "model.bin";
  if (Status st = WriteNoise(file, bytes); !st.ok()) return Failure(kCmd, st.message());
  const auto described_at = std::chrono::steady_clock::now();
  auto manifest = node::DescribeArtifactFile(file.string(), "model.bin", chunk);
  if (!manifest.ok()) return Failure(kCmd, manifest.status().message());
  const double describe_s = SecondsSince(described_at);
  const node::LocalArtifact local{*manifest, file.string()};

  crypto::Identity coordinator = crypto::Identity::Generate();
  auto daemon_creds = MakeBenchCredentials(coordinator, 1, crypto::kRoleNode);
  auto operator_creds = MakeBenchCredentials(coordinator, 2, crypto::kRoleOperator);
  if (!daemon_creds.ok() || !operator_creds.ok())
    return Failure(kCmd, "cannot make the bench's certificates");
  const crypto::TrustPolicy daemon_policy{"bench", coordinator.public_key(), crypto::kRoleOperator};
  const crypto::TrustPolicy operator_policy{"bench", coordinator.public_key(), crypto::kRoleNode};

  // The daemon's end: the store behind the control port, as murmurd answers
  // artifact_offer and artifact_put (node/daemon_control.cc).
  std::unique_ptr<node::ArtifactStore> store;
  auto handler = [&store](const proto::ControlRequest& r, const crypto::PeerInfo&) {
    Result<proto::ArtifactState> s = Status::InvalidArgument("not an artifact request");
    if (r.has_artifact_offer()) s = store->Offer(node::ManifestOf(r.artifact_offer()));
    if (r.has_artifact_put())
      s = store->Put(r.artifact_put().blake2b(), r.artifact_put().index(),
                     crypto::AsBytes(r.artifact_put().data()));
    proto::ControlResponse out;
    out.set_ok(s.ok());
    if (s.ok())
      *out.mutable_artifact() = *s;
    else
      out.set_error(s.status().ToString());
    return out;
  };
  IoThread io;
  node::ControlServer server(io.io(), *daemon_creds, daemon_policy, handler);
  Status started = server.Start("127.0.0.1", 0);
  if (!started.ok()) return Failure(kCmd, started.message());
  io.Run();
  const std::string address = "127.0.0.1:" + std::to_string(server.port());

  const crypto::Cipher cipher =
      crypto::AesGcmAvailable() ? crypto::Cipher::kAesGcm : crypto::Cipher::kChaChaPoly;
  std::printf(
      "murmur bench transfer: a %llu MB file (%zu chunks of %u bytes) from the operator to a daemon's "
      "artifact "
      "store over loopback, one control session (%s), %d runs\n",
      static_cast<unsigned long long>(megabytes), manifest->digests.size(), chunk,
      std::string(crypto::CipherName(cipher)).c_str(), runs);
  std::vector<double> rates;
  for (int run = 0; run < runs; ++run) {
    const fs::path store_dir = dir / "store";
    io.Do([&] {
      store.reset();
      fs::remove_all(store_dir, ec);
      store = node::ArtifactStore::Open(store_dir.string(), {bytes + 1, bytes + 1}).value();
    });
    const auto start = std::chrono::steady_clock::now();
    auto session =
        node::ControlSession::Open(address, *operator_creds, operator_policy, std::chrono::seconds(60));
    if (!session.ok()) return Failure(kCmd, session.status().message());
    auto report = node::OfferArtifact(**session, local, std::chrono::seconds(60));
    const double seconds = SecondsSince(start);
    if (!report.ok()) return Failure(kCmd, report.status().message());
    if (!report->complete || report->bytes_sent != bytes)
      return Failure(kCmd, "the daemon did not store the file whole");
    rates.push_back(static_cast<double>(bytes) / seconds / 1e6);
    std::printf("  run %d: %.1f MB/s (%.2f s)\n", run + 1, rates.back(), seconds);
  }
  io.Do([&] {
    server.Stop();
    store.reset();
  });
  io.Join();

  const crypto::Bytes message(chunk, 0x42);
  const Timing tcp = RawTcp(message, bytes, false);
  const double tcp_rate = static_cast<double>(bytes) / tcp.seconds / 1e6;
  const double aead = AeadSealRate(65519, 1.0, cipher).wall;
  const double b2 = Blake2bRate(chunk, 1.0);
  const double bound = 1.0 / (2.0 / b2 + 1.0 / aead);
  const double median = Median(rates);
  std::printf("  transfer: %.1f MB/s (median of %d runs; %.1f-%.1f)\n", median, runs,
              *std::min_element(rates.begin(), rates.end()), *std::max_element(rates.begin(), rates.end()));
  std::printf("  the operator's one pass to describe the file (BLAKE2b-512 and chunk digests): %.1f MB/s\n",
              static_cast<double>(bytes) / describe_s / 1e6);
  std::printf("floors measured in this run:\n");
  std::printf("  loopback TCP, %u-byte writes: %.1f MB/s\n", chunk, tcp_rate);
  std::printf("  %s seal, 65519-byte frames, one core: %.1f MB/s\n",
              std::string(crypto::CipherName(cipher)).c_str(), aead);
  std::printf("  BLAKE2b, %u-byte pieces, one core: %.1f MB/s\n", chunk, b2);
  std::printf("  bound: one side's BLAKE2b and AEAD pass, then the final BLAKE2b pass: %.1f MB/s\n", bound);
  std::printf("transfer / bound: %.2f; transfer / loopback TCP: %.2f\n", median / bound, median / tcp_rate);
  return kExitOk;
}

}  // namespace

int BenchTransfer(int argc, char** argv) {
  cxxopts::Options options("murmur bench transfer",
                           "a model file moved as an artifact to a daemon's store over loopback, against "
                           "loopback TCP, the session's AEAD and BLAKE2b measured in the same run");
  // clang-format off
  options.add_options()
    ("megabytes", "the file's size, MB (10^6 bytes)", cxxopts::value<std::uint64_t>()->default_value("256"))
    ("runs", "transfers timed (the median is the result)", cxxopts::value<int>()->default_value("3"))
    ("chunk-bytes", "bytes a chunk (4096-524288)", cxxopts::value<std::uint32_t>()->default_value("524288"))
    ("h,help", "show this help");
  // clang-format on
  cxxopts::ParseResult args;
  if (auto exit = ParseFlags(options, argc, argv, kCmd, &args)) return *exit;
  const auto megabytes = args["megabytes"].as<std::uint64_t>();
  const int runs = args["runs"].as<int>();
  const auto chunk = args["chunk-bytes"].as<std::uint32_t>();
  if (megabytes < 1 || megabytes > 100000) return UsageError(kCmd, "--megabytes must be in [1, 100000]");
  if (runs < 1 || runs > 100) return UsageError(kCmd, "--runs must be in [1, 100]");
  if (chunk < node::kMinArtifactChunkBytes || chunk > node::kMaxArtifactChunkBytes)
    return UsageError(kCmd, "--chunk-bytes must be in [4096, 524288]");
  return Run(megabytes, runs, chunk);
}

}  // namespace murmur::cli
