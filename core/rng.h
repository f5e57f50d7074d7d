// Rng: counter-based random numbers (Philox4x32-10, Salmon et al., SC 2011).
//
// Every random choice in murmur draws from a stream keyed by (run seed, node
// id, purpose). A stream's output depends only on its key and how many numbers
// were drawn from it, never on thread scheduling or on other streams, which is
// what makes a simulation bit-identical for any number of worker threads.
// Philox4x32-10 maps a 128-bit counter and a 64-bit key to 128 random bits;
// it passes BigCrush and is the generator of cuRAND, JAX and Random123.
//
// Thread-safety: an Rng is a value owned by one thread at a time.
#pragma once

#include <array>
#include <cmath>
#include <cstdint>
#include <span>
#include <string_view>

namespace murmur {

// One application of Philox4x32 with 10 rounds.
std::array<std::uint32_t, 4> Philox4x32_10(std::array<std::uint32_t, 4> counter,
                                           std::array<std::uint32_t, 2> key);

// Well-known purposes; any 32-bit value may be used. Keeping them in one
// place prevents two components from sharing a stream by accident.
enum class RngPurpose : std::uint32_t {
  kGeneric = 0,
  kInit = 1,                    // model initialization
  kBatch = 2,                   // mini-batch sampling
  kPartition = 3,               // data partitioning
  kTopology = 4,                // random graphs
  kCompression = 5,             // stochastic rounding, random-k
  kNetwork = 6,                 // link loss and jitter
  kDevice = 7,                  // device profiles, churn
  kPeerSampling = 8,            // gossip peer choice
  kMobility = 9,                // vehicles
  kPrivacy = 10,                // differential privacy noise
  kAttack = 11,                 // simulated adversaries
  kSelection = 12,              // federated client selection
  kMembership = 13,             // SWIM probe order and PING-REQ relays
  kFault = 14,                  // injected faults (core/faulty_env.h)
  kDropout = 15,                // dropout masks (ml/layers.h)
  kLinks = 16,                  // the simulator's link model (sim/net/links.h)
  kLowRank = 17,                // the initial Q shared by an all-reduce's nodes (gossip/lowrank_reduce.h)
  kSecureAggregation = 0x5EC0,  // SecAgg+ secrets and graph seeds in simulations only
};

class Rng {
 public:
  // The stream for (seed, node, purpose). Distinct triples give independent streams.
  Rng(std::uint64_t seed, std::uint64_t node, RngPurpose purpose);
  Rng(std::uint64_t seed, std::uint64_t node, std::uint32_t purpose);
  explicit Rng(std::uint64_t seed) : Rng(seed, 0, RngPurpose::kGeneric) {}

  // A child stream keyed additionally by `sub` (e.g. a round number), independent of this one.
  Rng Fork(std::uint64_t sub) const;

  std::uint32_t NextU32();
  std::uint64_t NextU64();
  // Uniform in [0, 1) with 24 (float) or 53 (double) random bits.
  float UniformFloat();
  double Uniform();
  double Uniform(double lo, double hi) { return lo + (hi - lo) * Uniform(); }
  // Uniform integer in [0, n), unbiased (Lemire 2019). REQUIRES: n > 0.
  std::uint64_t UniformInt(std::uint64_t n);
  // Standard normal (Box-Muller on two uniforms; the pair's second value is cached).
  double Normal();
  double Normal(double mean, double stddev) { return mean + stddev * Normal(); }
  bool Bernoulli(double p) { return Uniform() < p; }
  // Gamma(shape, 1) by Marsaglia and Tsang (2000). REQUIRES: shape > 0.
  double Gamma(double shape);
  // Exponential with the given rate. REQUIRES: rate > 0.
  double Exponential(double rate);

  // Fisher-Yates shuffle.
  template <typename T>
  void Shuffle(std::span<T> items) {
    for (std::size_t i = items.size(); i > 1; --i) {
      std::size_t j = static_cast<std::size_t>(UniformInt(i));
      std::swap(items[i - 1], items[j]);
    }
  }

  // Position of the stream (number of 128-bit blocks consumed); for tests.
  std::uint64_t blocks_used() const { return block_; }

  // Where a stream stands, for checkpoints: a stream built from the same
  // (seed, node, purpose) and then Seek(position()) draws exactly what this
  // one would draw next.
  struct Position {
    std::uint64_t block = 0;  // blocks generated
    int used = 4;             // words of the last block consumed (4: none left)
    bool has_spare_normal = false;
    double spare_normal = 0;
  };
  Position position() const { return {block_, used_, has_spare_normal_, spare_normal_}; }
  // REQUIRES: 0 <= used <= 4, and block > 0 when used < 4.
  void Seek(const Position& p);

 private:
  Rng(std::array<std::uint32_t, 2> key, std::uint64_t stream_hi, std::uint64_t stream_lo);
  void Refill();

  std::array<std::uint32_t, 2> key_{};
  std::uint64_t stream_ = 0;  // counter words 2-3: identifies the stream under the key
  std::uint64_t block_ = 0;   // counter words 0-1: block index within the stream
  std::array<std::uint32_t, 4> buffer_{};
  int used_ = 4;
  bool has_spare_normal_ = false;
  double spare_normal_ = 0;
};

// SplitMix64 finalizer: a bijective 64-bit mixer, used to derive keys.
std::uint64_t Mix64(std::uint64_t x);

}  // namespace murmur
