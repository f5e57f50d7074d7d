// GPU compression: the compressors of compression/compressors.h on vectors
// that live in CUDA device memory, producing bit for bit the Update the CPU
// compressor produces from the same input, state and Rng, so that GPU and
// CPU nodes interoperate in one fleet. Also the receiving side: applying an
// Update to a device vector, and gossip's weighted sum of neighbours' models.
//
// Only the encoded update crosses to the host: selection, value coding and
// the error-feedback residual stay on the device. What runs where:
//   - exact top-k: a histogram of the top 11 key bits (fused with r += x
//     under error feedback), an ordered compaction of the candidates (CUB),
//     and a stable radix sort of the candidates (ties to the lowest index);
//   - approximate top-k: the CPU's sample positions (drawn from the same
//     Rng on the host), the sample's quantile by a device sort, then one
//     compaction pass, with the CPU's retry and fallback rules;
//   - threshold: one compaction pass; random-k: the index set is generated
//     on the host (Floyd's algorithm is sequential by definition), the
//     values gathered and coded on the device;
//   - fp32, fp16, bf16, int8, sign, ternary and QSGD value coding, fused with
//     error feedback; sign's and QSGD's norms use the fixed-order reductions
//     of compression/values.h.
// Not on the GPU (Make refuses them, naming the spec): PowerSGD, DGC
// momentum and per-tensor top-k.
//
// Every call runs on the calling thread's default stream
// (cudaStreamPerThread), so worker threads overlap; each call returns when
// its results are ready on the host. Scratch space is per thread and grows
// only (no allocation per call once warm).
//
// Thread-safety: a GpuCompressor is const and shared; a GpuState belongs to
// one thread at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "compression/compressor.h"
#include "core/rng.h"
#include "core/status.h"

namespace murmur::compression::cuda {

struct DeviceInfo {
  std::string name;
  int compute_major = 0;
  int compute_minor = 0;
  int multiprocessors = 0;
  std::size_t memory_bytes = 0;
};

// Ok when a CUDA device can be used; Unavailable saying why otherwise.
Status DeviceStatus();
Result<DeviceInfo> Info();

// n floats of device memory (owning, move-only).
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  // ResourceExhausted naming the size when the device has no room.
  static Result<DeviceBuffer> Make(std::size_t n);
  DeviceBuffer(DeviceBuffer&& other) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer();

  float* data() { return data_; }
  const float* data() const { return data_; }
  std::size_t size() const { return size_; }
  // Copies between host and device. REQUIRES: host.size() == size().
  void Upload(std::span<const float> host);
  void Download(std::span<float> host) const;
  void Zero();

 private:
  float* data_ = nullptr;
  std::size_t size_ = 0;
};

// What one node carries from call to call: the CPU state's counters, and its
// error-feedback residual in device memory (sized on first use, zeroed).
struct GpuState {
  std::uint64_t node = 0;
  std::uint64_t round = 0;
  DeviceBuffer residual;
};

class GpuCompressor {
 public:
  // The GPU counterpart of `cpu` (made by MakeCompressor). InvalidArgument
  // naming the spec for a compressor with no GPU kernels.
  static Result<std::unique_ptr<GpuCompressor>> Make(const Compressor& cpu);
  virtual ~GpuCompressor() = default;
  virtual const std::string& spec() const = 0;

  // Compresses the n floats at device address `delta` exactly as the CPU
  // compressor compresses the same floats with a CompressorState holding
  // state's node, round and residual, drawing the same numbers from rng.
  // REQUIRES: n < 2^32, the same n on every call with one state.
  virtual std::shared_ptr<const Update> Compress(const float* delta, std::size_t n, GpuState& state,
                                                 Rng& rng) const = 0;
};

// out += scale * update for the n floats at device address `out`, decoding
// on the device with the CPU's arithmetic (Update::AddTo), bit for bit.
// Dense and sparse updates in every value coding, random-k and shared
// dense fp32 ones; InvalidArgument for a size mismatch or a low-rank
// (PowerSGD) update.
Status AddTo(const Update& update, float* out, std::size_t n, float scale = 1.0f);

// acc = own * x + sum_k weights[k] * inputs[k], element by element in the
// order of gossip's MixDense (products rounded, then added in k order), all
// device addresses of n floats. REQUIRES: inputs.size() == weights.size().
void MixDense(float own, const float* x, std::span<const float* const> inputs, std::span<const float> weights,
              float* acc, std::size_t n);

// Selection alone, for benchmarks and tests: the indices (ascending) of the
// exact top-k of the n floats at `a` into `out` (device, room for k), as
// TopKExact; approximate top-k as TopKApprox (returns how many it chose).
void TopKExactDevice(const float* a, std::size_t n, std::size_t k, std::uint32_t* out);
std::size_t TopKApproxDevice(const float* a, std::size_t n, std::size_t k, Rng& rng, std::uint32_t* out);

// Device memory for m indices (owning), for TopK*Device.
class DeviceIndices {
 public:
  static Result<DeviceIndices> Make(std::size_t m);
  DeviceIndices() = default;
  DeviceIndices(DeviceIndices&& other) noexcept;
  DeviceIndices& operator=(DeviceIndices&& other) noexcept;
  ~DeviceIndices();
  std::uint32_t* data() { return data_; }
  std::size_t size() const { return size_; }
  std::vector<std::uint32_t> Download(std::size_t count) const;

 private:
  std::uint32_t* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace murmur::compression::cuda
