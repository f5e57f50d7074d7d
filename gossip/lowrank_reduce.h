// LowRankReduce: PowerSGD inside an all-reduce (Vogels, Karimireddy and
// Jaggi, "PowerSGD: Practical low-rank gradient compression for distributed
// optimization", NeurIPS 2019, Alg. 1 and 2; the schedule of PyTorch DDP's
// PowerSGD hook). The low-rank factors all-reduce exactly, because both
// products are linear in the compressed matrix: the mean of the nodes'
// P_i = M_i Q is (mean M) Q, and the mean of their Q_i = M_i^T P^ is
// (mean M)^T P^. A round is two all-reduces:
//
//   M_i = d_i + e_i for node i's progress d_i (the model at the round's
//     start minus the model after its local steps) and its residual e_i;
//   all-reduce 1: for each compressed tensor (rows x cols, rows = its first
//     dimension), P_i = M_i Q with the shared Q (cols x r), and every other
//     tensor whole; take the means;
//   P^ = the mean P with orthonormal columns (modified Gram-Schmidt, the same
//     bits on every node);
//   all-reduce 2: Q_i = M_i^T P^; take the mean Q;
//   the agreed progress is P^ Q^T for the compressed tensors and the mean
//     M for the others; e_i = M_i - agreed (error feedback), and Q is the
//     next round's warm start.
//
// Every node thus takes the same step, PowerSGD applied to the mean of the
// M_i, bit for bit alike, and sends r (rows + cols) values per compressed
// tensor through the collective instead of rows x cols. A tensor is
// compressed when it has at least two rows and columns and
// r (rows + cols) < rows x cols (as compression/powersgd.h), with
// r = min(rank, rows, cols). The first Q has N(0, 1) entries from the
// stream (seed, 0, RngPurpose::kLowRank), the same on every node.
//
// Thread-safety: none; one per node.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "core/param_vector.h"
#include "core/status.h"
#include "gossip/node_state.h"

namespace murmur::gossip {

class LowRankReduce {
 public:
  // Every node of a job must be built with the same layout, rank and seed.
  // A layout without tensors is one flat vector (sent whole).
  LowRankReduce(const Layout& layout, std::size_t size, std::uint32_t rank, bool error_feedback,
                std::uint64_t seed);

  // The lengths of the two all-reduced vectors: the P factors and then the
  // uncompressed tensors; the Q factors.
  std::size_t first_size() const { return first_size_; }
  std::size_t second_size() const { return q_.size(); }

  // All-reduce 1's vector from this node's progress d (the model's size).
  void First(std::span<const float> progress, std::span<float> out);
  // All-reduce 2's vector, given the mean of all-reduce 1.
  void Second(std::span<const float> first_mean, std::span<float> out);
  // The agreed progress (the model's size), given the mean of all-reduce 2;
  // updates the residual and the warm start. A round whose all-reduce
  // failed never calls it, and leaves both as they were.
  void Finish(std::span<const float> second_mean, std::span<float> agreed);

  // The shared Q of the round to come, each compressed tensor's cols x r
  // block (row-major) in layout order.
  const std::vector<float>& q() const { return q_; }
  // What a checkpoint keeps: the residual ("lowrank/residual", the model's
  // size, absent without error feedback) and the Q's ("lowrank/q", wide).
  void ExportState(NodeState& out) const;
  // InvalidArgument naming the entry when one is missing or of another size.
  Status ImportState(const NodeState& state);
  std::size_t state_floats() const { return residual_.size() + q_.size() + m_.size() + p_hat_.size(); }

 private:
  struct Tensor {
    std::size_t offset = 0, size = 0, rows = 0, cols = 0, rank = 0;  // rank 0: sent whole
    std::size_t first_at = 0;  // where its P (or the whole tensor) is in all-reduce 1's vector
    std::size_t q_at = 0;      // where its Q is in q_ and all-reduce 2's vector
  };
  std::vector<Tensor> tensors_;
  std::size_t first_size_ = 0;
  bool error_feedback_;
  std::vector<float> q_;         // the shared Q's
  std::vector<float> residual_;  // e_i (empty without error feedback)
  std::vector<float> m_;         // this round's M_i
  std::vector<float> p_hat_;     // this round's P^'s, each rows x r, and the whole tensors' means
};

}  // namespace murmur::gossip
