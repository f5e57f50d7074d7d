// Shared pieces of `murmur bench`: the floors benchmarks are compared with,
// measured in the same run, and the benchmark entry points.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <vector>

#include "ml/dataset.h"
#include "ml/model.h"

namespace murmur::cli {

// The q-quantile of v, interpolated between its nearest ranks, and the
// median (Quantile 0.5: the mean of the middle two for an even count).
double Quantile(std::vector<double> v, double q);
double Median(const std::vector<double>& v);

double SecondsSince(std::chrono::steady_clock::time_point since);

// GFLOP/s of C = A B (m x k times k x n, row-major float) on murmur's
// GEMM (core/gemm.h) on `threads` threads, each multiplying its own
// matrices; about `seconds` of wall time.
double GemmRate(std::int64_t m, std::int64_t k, std::int64_t n, int threads, double seconds);

// GFLOP/s of `run`, which does `flops` floating-point operations a call,
// called repeatedly on this thread for about `seconds` after a warm-up call.
double ProductRate(double flops, double seconds, const std::function<void()>& run);

// The core's peak rate of fused multiply-adds, in GFLOP/s (2 per lane): 24
// independent chains of vector FMAs (16 on AVX2, whose 16 registers hold
// fewer; scalar std::fma where the CPU has no vector level) at the best
// level this CPU has, on this thread, the fastest of several short runs
// within about `seconds`. The floor every training rate is compared with.
double FmaPeak(double seconds);

// GFLOP/s of the training part of a simulated round: `nodes` models of
// `model` (each its own ParamVector, as the simulator's nodes have), each
// taking one SGD step of `batch` samples of `data` in turn on this thread,
// as MlLearner does for a node, for about `seconds`; the model's
// FlopsPerSample() x samples over the time.
double NodeStepRate(const ml::Model& model, const ml::Dataset& data, int nodes, int batch, double seconds);

// GB/s of reading a buffer far larger than the caches (a float sum) on
// `threads` threads, and of y += a x over such buffers (bytes read + written).
double MemoryReadRate(int threads, double seconds);
double AxpyRate(int threads, double seconds);

int BenchSim(int argc, char** argv);
int BenchTransport(int argc, char** argv);
int BenchTransfer(int argc, char** argv);
int BenchTorchScript(int argc, char** argv);

}  // namespace murmur::cli
