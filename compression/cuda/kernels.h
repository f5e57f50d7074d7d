// The launchers behind compression/cuda/gpu.h, on raw device pointers and a
// stream: for the module's own files, its tests and its benchmark.
//
// Thread-safety: reentrant; every buffer belongs to the caller.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "compression/values.h"

namespace murmur::compression::cuda::detail {

// What a value-coding kernel reads and leaves in the residual r:
//   kPlain:   codes x; r untouched (may be null)
//   kFused:   codes a = x + r and leaves r = a - Q(a), in the same pass
//   kInPlace: codes a = r and leaves r = a - Q(a) (x unused): the second half
//             of the unfused pair r += x; quantize r
enum class Mode { kPlain, kFused, kInPlace };

// Codes n values as PackValues does. payload: coding.PayloadBytes(n) bytes
// rounded up to a multiple of 4 (zeroed here); scales: coding.NumScales(n)
// floats. `work` holds ReduceWorkFloats(n) doubles for the one-scale codings.
void PackValuesDevice(const float* x, float* r, std::size_t n, const ValueCoding& coding, std::uint64_t key,
                      Mode mode, std::uint8_t* payload, float* scales, double* work, cudaStream_t stream);
std::size_t ReduceWorkDoubles(std::size_t n);

// r += x.
void Accumulate(float* r, const float* x, std::size_t n, cudaStream_t stream);
// out[j] = gain * a[idx[j]] (the product only when gain != 1).
void Gather(const float* a, const std::uint32_t* idx, std::size_t m, float gain, float* out,
            cudaStream_t stream);
// r[idx[j]] = 0.
void ZeroAt(float* r, const std::uint32_t* idx, std::size_t m, cudaStream_t stream);
// r[idx[j]] -= value j of the coded values (payload, scales).
void SubtractCodedAt(float* r, const std::uint32_t* idx, std::size_t m, const ValueCoding& coding,
                     const std::uint8_t* payload, const float* scales, cudaStream_t stream);
// out[idx[j]] += scale * value j (idx null: out[j]), with Update::AddTo's arithmetic.
void AddCoded(float* out, const std::uint32_t* idx, std::size_t m, const ValueCoding& coding,
              const std::uint8_t* payload, const float* scales, float scale, cudaStream_t stream);

// The histogram of AbsKey(a) >> 20 (2048 buckets, zeroed here), with
// r += x fused (a = r after it) when x is not null.
void KeyHistogram(float* r, const float* x, std::size_t n, std::uint32_t* hist, cudaStream_t stream);

// Sums the n floats at a into *out (one float, zeroed here), reading each
// once: the read-bandwidth floor that benchmarks compare kernels with.
void ReadAll(const float* a, std::size_t n, float* out, cudaStream_t stream);
// acc = own * x + sum_k weights[k] * inputs[k] (device arrays of count pointers and weights).
void LaunchMix(float own, const float* x, const float* const* inputs, const float* weights, int count,
               float* acc, std::size_t n, cudaStream_t stream);

// Aborts with the CUDA error's name and `what` unless err is cudaSuccess.
void Check(cudaError_t err, const char* what);

}  // namespace murmur::compression::cuda::detail
