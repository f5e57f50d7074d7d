// The GPU compression kernels against the floors they are bound by, measured
// in the same run (docs/benchmarks.md, "GPU compression"):
//   - the device's read bandwidth (one pass summing the vector) for exact
//     and approximate top-k, which read the vector twice and once;
//   - the unfused pair (r += x, then quantize r) for fused error feedback;
//   - the CPU compressor on the same data, one core, for the speed-up.
// Usage: cuda_bench [--n N] [--fraction F] [--iters I]
#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "compression/compressor.h"
#include "compression/cuda/gpu.h"
#include "compression/cuda/kernels.h"
#include "compression/cuda/select.h"
#include "compression/select.h"

namespace {

using namespace murmur;
using namespace murmur::compression;
using Clock = std::chrono::steady_clock;

// Median seconds of `iters` runs of f after two warm-ups; f returns when its work is done.
template <typename F>
double Median(int iters, F&& f) {
  f();
  f();
  std::vector<double> t;
  for (int i = 0; i < iters; ++i) {
    auto start = Clock::now();
    f();
    t.push_back(std::chrono::duration<double>(Clock::now() - start).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

void Sync() { cuda::detail::Check(cudaStreamSynchronize(cudaStreamPerThread), "sync"); }

}  // namespace

int main(int argc, char** argv) {
  std::size_t n = 100'000'000;
  double fraction = 0.001;
  int iters = 20;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--n")
      n = std::strtoull(argv[i + 1], nullptr, 10);
    else if (a == "--fraction")
      fraction = std::strtod(argv[i + 1], nullptr);
    else if (a == "--iters")
      iters = std::atoi(argv[i + 1]);
    else {
      std::fprintf(stderr, "usage: cuda_bench [--n N] [--fraction F] [--iters I]\n");
      return 2;
    }
  }
  Status st = cuda::DeviceStatus();
  if (!st.ok()) {
    std::fprintf(stderr, "cuda_bench: %s\n", st.message().c_str());
    return 1;
  }
  cuda::DeviceInfo info = cuda::Info().value();
  std::printf("device: %s, compute %d.%d, %d SMs, %.1f GiB\n", info.name.c_str(), info.compute_major,
              info.compute_minor, info.multiprocessors, static_cast<double>(info.memory_bytes) / (1u << 30));
  const std::size_t k = std::max<std::size_t>(1, static_cast<std::size_t>(fraction * static_cast<double>(n)));
  std::printf("vector: %zu float32 (%.0f MB), N(0, 1); k = %zu (%.3g%%)\n", n, 4e-6 * static_cast<double>(n),
              k, 100.0 * fraction);

  std::vector<float> host(n);
  {
    std::mt19937_64 gen(1);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    for (float& v : host) v = normal(gen);
  }
  cuda::DeviceBuffer x = cuda::DeviceBuffer::Make(n).value();
  cuda::DeviceBuffer r = cuda::DeviceBuffer::Make(n).value();
  x.Upload(host);
  r.Zero();
  const cudaStream_t s = cudaStreamPerThread;
  const double bytes = 4.0 * static_cast<double>(n);

  // Floors.
  float* sum = nullptr;
  cuda::detail::Check(cudaMalloc(reinterpret_cast<void**>(&sum), sizeof(float)), "cudaMalloc");
  const double t_read = Median(iters, [&] {
    cuda::detail::ReadAll(x.data(), n, sum, s);
    Sync();
  });
  const double read_bw = bytes / t_read;
  cuda::DeviceBuffer y = cuda::DeviceBuffer::Make(n).value();
  const double t_copy = Median(iters, [&] {
    cuda::detail::Check(cudaMemcpyAsync(y.data(), x.data(), 4 * n, cudaMemcpyDeviceToDevice, s), "copy");
    Sync();
  });
  std::printf("floor: read %.0f GB/s (one pass summing the vector, %.3f ms); copy %.0f GB/s read+write\n",
              read_bw / 1e9, 1e3 * t_read, 2 * bytes / t_copy / 1e9);

  // Top-k selection alone (indices on the device).
  auto out = cuda::DeviceIndices::Make(std::max(k, 13 * k / 10 + 1)).value();
  const double t_exact = Median(iters, [&] { cuda::TopKExactDevice(x.data(), n, k, out.data()); });
  std::printf("topk exact:  %.3f ms, %.0f GB/s of the vector = %.2f of the read floor (target 0.40)\n",
              1e3 * t_exact, bytes / t_exact / 1e9, bytes / t_exact / read_bw);
  Rng rng(3);
  std::size_t got = 0;
  const double t_approx =
      Median(iters, [&] { got = cuda::TopKApproxDevice(x.data(), n, k, rng, out.data()); });
  std::printf(
      "topk approx: %.3f ms, %.0f GB/s of the vector = %.2f of the read floor (target 0.70); chose %zu of k "
      "= %zu\n",
      1e3 * t_approx, bytes / t_approx / 1e9, bytes / t_approx / read_bw, got, k);

  // Fused error feedback against the unfused pair.
  const ValueCoding int8{ValueType::kInt8, 256, 0};
  std::uint8_t* payload = nullptr;
  float* scales = nullptr;
  double* work = nullptr;
  cuda::detail::Check(cudaMalloc(reinterpret_cast<void**>(&payload), int8.PayloadBytes(n) + 8), "cudaMalloc");
  cuda::detail::Check(cudaMalloc(reinterpret_cast<void**>(&scales), 4 * int8.NumScales(n) + 4), "cudaMalloc");
  cuda::detail::Check(cudaMalloc(reinterpret_cast<void**>(&work), 8 * cuda::detail::ReduceWorkDoubles(n)),
                      "cudaMalloc");
  const double t_fused = Median(iters, [&] {
    cuda::detail::PackValuesDevice(x.data(), r.data(), n, int8, 9, cuda::detail::Mode::kFused, payload,
                                   scales, work, s);
    Sync();
  });
  const double t_pair = Median(iters, [&] {
    cuda::detail::Accumulate(r.data(), x.data(), n, s);
    cuda::detail::PackValuesDevice(nullptr, r.data(), n, int8, 9, cuda::detail::Mode::kInPlace, payload,
                                   scales, work, s);
    Sync();
  });
  std::printf("int8 with error feedback: fused %.3f ms, unfused pair %.3f ms: %.2fx (target 1.5x)\n",
              1e3 * t_fused, 1e3 * t_pair, t_pair / t_fused);
  auto* idx = out.data();
  const double t_topk_fused =
      Median(iters, [&] { cuda::detail::TopKExact(r.data(), x.data(), n, k, idx, s); });
  const double t_topk_pair = Median(iters, [&] {
    cuda::detail::Accumulate(r.data(), x.data(), n, s);
    cuda::detail::TopKExact(r.data(), nullptr, n, k, idx, s);
  });
  std::printf("topk with error feedback: fused %.3f ms, unfused pair %.3f ms: %.2fx\n", 1e3 * t_topk_fused,
              1e3 * t_topk_pair, t_topk_pair / t_topk_fused);

  // The whole compressor, device to wire bytes on the host, against the CPU's (one core).
  for (const char* spec : {"topk:0.001", "topk-approx:0.001", "int8,ef", "sign"}) {
    auto cpu = MakeCompressor(spec).value();
    auto gpu = cuda::GpuCompressor::Make(*cpu).value();
    CompressorState cs;
    cuda::GpuState gs;
    Rng rc(1), rg(1);
    const int cpu_iters = 3;
    const double t_cpu = Median(cpu_iters, [&] { cpu->Compress(host, Layout{}, cs, rc); });
    const double t_gpu = Median(iters, [&] { gpu->Compress(x.data(), n, gs, rg); });
    std::printf("compressor %-18s GPU %.3f ms (wire bytes on the host), CPU one core %.1f ms: %.0fx\n", spec,
                1e3 * t_gpu, 1e3 * t_cpu, t_cpu / t_gpu);
  }
  cudaFree(sum);
  cudaFree(payload);
  cudaFree(scales);
  cudaFree(work);
  return 0;
}
