// The GPU compressors, update application and mixing of compression/cuda/gpu.h.
#include "compression/cuda/gpu.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstring>
#include <utility>

#include "compression/compressors.h"
#include "compression/cuda/kernels.h"
#include "compression/cuda/select.h"

namespace murmur::compression::cuda {

using detail::Check;
using detail::Slot;
using detail::ThreadScratch;

namespace {
const cudaStream_t kStream = cudaStreamPerThread;

std::string SizeText(std::size_t bytes) { return std::to_string(bytes) + " bytes"; }

// Copies the coded values (payload and scales of `count` values) from the
// device into a PackedValues.
PackedValues FetchValues(const ValueCoding& coding, std::size_t count, const std::uint8_t* payload,
                         const float* scales) {
  PackedValues pv;
  pv.coding = coding;
  pv.count = count;
  const std::size_t pbytes = coding.PayloadBytes(count), nscales = coding.NumScales(count);
  detail::Scratch& s = ThreadScratch();
  auto* host = static_cast<std::uint8_t*>(s.Host(Slot::kPayload, pbytes + 4 * nscales));
  if (pbytes > 0)
    Check(cudaMemcpyAsync(host, payload, pbytes, cudaMemcpyDeviceToHost, kStream), "copy payload");
  if (nscales > 0)
    Check(cudaMemcpyAsync(host + pbytes, scales, 4 * nscales, cudaMemcpyDeviceToHost, kStream),
          "copy scales");
  Check(cudaStreamSynchronize(kStream), "coded values");
  pv.payload.assign(host, host + pbytes);
  pv.scales.resize(nscales);
  if (nscales > 0) std::memcpy(pv.scales.data(), host + pbytes, 4 * nscales);
  return pv;
}

// The residual of `state`, sized (and zeroed) for n on first use.
float* Residual(GpuState& state, std::size_t n) {
  if (state.residual.size() != n || (n > 0 && state.residual.data() == nullptr)) {
    Result<DeviceBuffer> b = DeviceBuffer::Make(n);
    MURMUR_CHECK_MSG(b.ok(), b.status().ToString());
    state.residual = std::move(b).value();
    state.residual.Zero();
  }
  return state.residual.data();
}

struct ValueBuffers {
  std::uint8_t* payload;
  float* scales;
  double* work;
};

ValueBuffers Buffers(const ValueCoding& coding, std::size_t count) {
  detail::Scratch& s = ThreadScratch();
  return {static_cast<std::uint8_t*>(s.Device(Slot::kPayload, (coding.PayloadBytes(count) + 3) / 4 * 4 + 4)),
          static_cast<float*>(s.Device(Slot::kScales, 4 * coding.NumScales(count) + 4)),
          static_cast<double*>(s.Device(Slot::kWork, 8 * detail::ReduceWorkDoubles(count)))};
}

class GpuDense final : public GpuCompressor {
 public:
  GpuDense(std::string spec, ValueCoding coding, bool ef)
      : spec_(std::move(spec)), coding_(coding), ef_(ef) {}
  const std::string& spec() const override { return spec_; }

  std::shared_ptr<const Update> Compress(const float* delta, std::size_t n, GpuState& state,
                                         Rng& rng) const override {
    MURMUR_CHECK(n <= 0xFFFFFFFFu);
    float* r = ef_ ? Residual(state, n) : nullptr;
    ++state.round;
    const std::uint64_t key = rng.NextU64();
    ValueBuffers b = Buffers(coding_, n);
    detail::PackValuesDevice(delta, r, n, coding_, key, ef_ ? detail::Mode::kFused : detail::Mode::kPlain,
                             b.payload, b.scales, b.work, kStream);
    return std::make_shared<const Update>(Update::Dense(n, FetchValues(coding_, n, b.payload, b.scales)));
  }

 private:
  std::string spec_;
  ValueCoding coding_;
  bool ef_;
};

class GpuSparse final : public GpuCompressor {
 public:
  GpuSparse(std::string spec, const SparseCompressor& cpu)
      : spec_(std::move(spec)), cpu_(spec_, cpu.options()), o_(cpu.options()) {}
  const std::string& spec() const override { return spec_; }

  std::shared_ptr<const Update> Compress(const float* delta, std::size_t n, GpuState& state,
                                         Rng& rng) const override {
    MURMUR_CHECK(n <= 0xFFFFFFFFu);
    detail::Scratch& s = ThreadScratch();
    const bool ef = o_.error_feedback;
    // Selection reads (and with error feedback first accumulates into) r.
    float* r = ef ? Residual(state, n) : const_cast<float*>(delta);
    const float* x = ef ? delta : nullptr;
    const RandomKKey key{rng.NextU64(), state.round, state.node};
    const std::size_t k = cpu_.KFor(n);
    std::size_t room = n;
    if (o_.selection == Selection::kTopK) room = k;
    if (o_.selection == Selection::kTopKApprox) room = std::max(k, 13 * k / 10 + 1);
    auto* idx = static_cast<std::uint32_t*>(s.Device(Slot::kIndices, 4 * room + 4));
    std::size_t m = 0;
    std::vector<std::uint32_t> random_idx;
    switch (o_.selection) {
      case Selection::kTopK:
        detail::TopKExact(r, x, n, k, idx, kStream);
        m = k;
        break;
      case Selection::kTopKApprox: m = detail::TopKApprox(r, x, n, k, rng, idx, kStream); break;
      case Selection::kThreshold: m = detail::Threshold(r, x, n, o_.threshold, idx, kStream); break;
      case Selection::kRandomK: {
        if (ef) detail::Accumulate(r, x, n, kStream);
        random_idx = RandomKIndices(n, k, key);
        m = random_idx.size();
        if (m > 0)
          Check(cudaMemcpyAsync(idx, random_idx.data(), 4 * m, cudaMemcpyHostToDevice, kStream),
                "copy indices");
        break;
      }
    }
    const float gain =
        o_.selection == Selection::kRandomK && o_.unbiased && m > 0 ? float(n) / float(m) : 1.0f;
    auto* vals = static_cast<float*>(s.Device(Slot::kValues, 4 * m + 4));
    detail::Gather(r, idx, m, gain, vals, kStream);
    ValueBuffers b = Buffers(o_.values, m);
    detail::PackValuesDevice(vals, nullptr, m, o_.values, rng.NextU64(), detail::Mode::kPlain, b.payload,
                             b.scales, b.work, kStream);
    if (ef) {
      if (o_.values.type == ValueType::kF32 && gain == 1.0f)
        detail::ZeroAt(r, idx, m, kStream);
      else
        detail::SubtractCodedAt(r, idx, m, o_.values, b.payload, b.scales, kStream);
    }
    std::vector<std::uint32_t> indices;
    if (o_.selection != Selection::kRandomK && m > 0) {
      auto* host = static_cast<std::uint32_t*>(s.Host(Slot::kIndices, 4 * m));
      Check(cudaMemcpyAsync(host, idx, 4 * m, cudaMemcpyDeviceToHost, kStream), "copy indices");
      Check(cudaStreamSynchronize(kStream), "indices");
      indices.assign(host, host + m);
    }
    PackedValues pv = FetchValues(o_.values, m, b.payload, b.scales);
    ++state.round;
    if (o_.selection == Selection::kRandomK)
      return std::make_shared<const Update>(Update::RandomK(n, key, std::move(pv)));
    return std::make_shared<const Update>(Update::Sparse(n, std::move(indices), std::move(pv)));
  }

 private:
  std::string spec_;
  SparseCompressor cpu_;  // a copy: KFor
  SparseOptions o_;
};

}  // namespace

Status DeviceStatus() {
  int count = 0;
  cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess)
    return Status::Unavailable(std::string("no usable CUDA device: ") + cudaGetErrorString(err));
  if (count == 0) return Status::Unavailable("no CUDA device");
  return Status::Ok();
}

Result<DeviceInfo> Info() {
  MURMUR_RETURN_IF_ERROR(DeviceStatus());
  int device = 0;
  Check(cudaGetDevice(&device), "cudaGetDevice");
  cudaDeviceProp p{};
  Check(cudaGetDeviceProperties(&p, device), "cudaGetDeviceProperties");
  return DeviceInfo{p.name, p.major, p.minor, p.multiProcessorCount, p.totalGlobalMem};
}

Result<DeviceBuffer> DeviceBuffer::Make(std::size_t n) {
  DeviceBuffer b;
  if (n == 0) return std::move(b);
  if (cudaMalloc(&b.data_, 4 * n) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky-free allocation error
    b.data_ = nullptr;
    return Status::ResourceExhausted("no room on the GPU for " + std::to_string(n) + " floats (" +
                                     SizeText(4 * n) + ")");
  }
  b.size_ = n;
  return std::move(b);
}

DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    if (data_ != nullptr) cudaFree(data_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

DeviceBuffer::~DeviceBuffer() {
  if (data_ != nullptr) cudaFree(data_);
}

void DeviceBuffer::Upload(std::span<const float> host) {
  MURMUR_CHECK(host.size() == size_);
  if (size_ > 0) Check(cudaMemcpy(data_, host.data(), 4 * size_, cudaMemcpyHostToDevice), "upload");
}

void DeviceBuffer::Download(std::span<float> host) const {
  MURMUR_CHECK(host.size() == size_);
  if (size_ > 0) Check(cudaMemcpy(host.data(), data_, 4 * size_, cudaMemcpyDeviceToHost), "download");
}

void DeviceBuffer::Zero() {
  if (size_ > 0) Check(cudaMemset(data_, 0, 4 * size_), "memset");
}

Result<DeviceIndices> DeviceIndices::Make(std::size_t m) {
  DeviceIndices d;
  if (m == 0) return std::move(d);
  if (cudaMalloc(&d.data_, 4 * m) != cudaSuccess) {
    cudaGetLastError();
    d.data_ = nullptr;
    return Status::ResourceExhausted("no room on the GPU for " + std::to_string(m) + " indices");
  }
  d.size_ = m;
  return std::move(d);
}

DeviceIndices::DeviceIndices(DeviceIndices&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}

DeviceIndices& DeviceIndices::operator=(DeviceIndices&& other) noexcept {
  if (this != &other) {
    if (data_ != nullptr) cudaFree(data_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

DeviceIndices::~DeviceIndices() {
  if (data_ != nullptr) cudaFree(data_);
}

std::vector<std::uint32_t> DeviceIndices::Download(std::size_t count) const {
  MURMUR_CHECK(count <= size_);
  std::vector<std::uint32_t> out(count);
  if (count > 0) Check(cudaMemcpy(out.data(), data_, 4 * count, cudaMemcpyDeviceToHost), "download");
  return out;
}

Result<std::unique_ptr<GpuCompressor>> GpuCompressor::Make(const Compressor& cpu) {
  const std::string& spec = cpu.spec();
  if (const auto* dense = dynamic_cast<const DenseCompressor*>(&cpu))
    return std::unique_ptr<GpuCompressor>(new GpuDense(spec, dense->coding(), dense->error_feedback()));
  if (const auto* sparse = dynamic_cast<const SparseCompressor*>(&cpu)) {
    if (sparse->options().dgc_momentum > 0)
      return Status::InvalidArgument("compressor '" + spec +
                                     "': DGC momentum has no GPU kernels; use it on the CPU");
    if (sparse->options().per_tensor)
      return Status::InvalidArgument(
          "compressor '" + spec + "': per-tensor top-k has no GPU kernels; use whole-model top-k or the CPU");
    return std::unique_ptr<GpuCompressor>(new GpuSparse(spec, *sparse));
  }
  return Status::InvalidArgument("compressor '" + spec + "' has no GPU kernels (PowerSGD runs on the CPU)");
}

Status AddTo(const Update& update, float* out, std::size_t n, float scale) {
  if (n != update.size())
    return Status::InvalidArgument("update of " + std::to_string(update.size()) +
                                   " elements added to a vector of " + std::to_string(n));
  if (update.format() == UpdateFormat::kLowRank)
    return Status::InvalidArgument(
        "a low-rank (PowerSGD) update is applied on the host (Update::AddTo), not on the GPU");
  detail::Scratch& s = ThreadScratch();
  ValueCoding coding;
  std::size_t m = n;
  const std::uint8_t* payload = nullptr;
  const float* scales = nullptr;
  std::size_t pbytes = 0, nscales = 0;
  if (const float* dense = update.dense_f32()) {
    payload = reinterpret_cast<const std::uint8_t*>(dense);
    pbytes = 4 * n;
  } else {
    const PackedValues& v = update.values();
    coding = v.coding;
    m = v.count;
    payload = v.payload.data();
    pbytes = v.payload.size();
    scales = v.scales.data();
    nscales = v.scales.size();
  }
  std::span<const std::uint32_t> indices = update.indices();
  const bool sparse = update.format() != UpdateFormat::kDense;
  auto* d_payload = static_cast<std::uint8_t*>(s.Device(Slot::kPayload, pbytes + 4));
  auto* d_scales = static_cast<float*>(s.Device(Slot::kScales, 4 * nscales + 4));
  auto* d_idx = static_cast<std::uint32_t*>(s.Device(Slot::kIndices, 4 * indices.size() + 4));
  if (pbytes > 0)
    Check(cudaMemcpyAsync(d_payload, payload, pbytes, cudaMemcpyHostToDevice, kStream), "upload payload");
  if (nscales > 0)
    Check(cudaMemcpyAsync(d_scales, scales, 4 * nscales, cudaMemcpyHostToDevice, kStream), "upload scales");
  if (sparse && !indices.empty())
    Check(cudaMemcpyAsync(d_idx, indices.data(), 4 * indices.size(), cudaMemcpyHostToDevice, kStream),
          "upload indices");
  detail::AddCoded(out, sparse ? d_idx : nullptr, m, coding, d_payload, d_scales, scale, kStream);
  Check(cudaStreamSynchronize(kStream), "AddTo");
  return Status::Ok();
}

void MixDense(float own, const float* x, std::span<const float* const> inputs, std::span<const float> weights,
              float* acc, std::size_t n) {
  MURMUR_CHECK(inputs.size() == weights.size());
  detail::Scratch& s = ThreadScratch();
  const std::size_t count = inputs.size();
  const std::size_t bytes = 8 * count + 4 * count + 8;
  auto* host = static_cast<std::uint8_t*>(s.Host(Slot::kMix, bytes));
  auto* dev = static_cast<std::uint8_t*>(s.Device(Slot::kMix, bytes));
  std::memcpy(host, inputs.data(), 8 * count);
  std::memcpy(host + 8 * count, weights.data(), 4 * count);
  if (count > 0) Check(cudaMemcpyAsync(dev, host, 12 * count, cudaMemcpyHostToDevice, kStream), "upload mix");
  detail::LaunchMix(own, x, reinterpret_cast<const float* const*>(dev),
                    reinterpret_cast<const float*>(dev + 8 * count), static_cast<int>(count), acc, n,
                    kStream);
  Check(cudaStreamSynchronize(kStream), "MixDense");
}

void TopKExactDevice(const float* a, std::size_t n, std::size_t k, std::uint32_t* out) {
  detail::TopKExact(const_cast<float*>(a), nullptr, n, std::min(k, n), out, kStream);
}

std::size_t TopKApproxDevice(const float* a, std::size_t n, std::size_t k, Rng& rng, std::uint32_t* out) {
  return detail::TopKApprox(const_cast<float*>(a), nullptr, n, std::min(k, n), rng, out, kStream);
}

}  // namespace murmur::compression::cuda
