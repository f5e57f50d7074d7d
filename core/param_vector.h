// ParamVector: a model's parameters as one contiguous, 64-byte aligned float32
// buffer, with a Layout naming the tensors inside it.
//
// Algorithms (mixing, compression, optimizers) see the flat vector; code that
// cares about structure (a model's layers, PowerSGD, per-tensor top-k) reads
// the Layout. Views (std::span, Eigen::Map) never copy; copying a ParamVector is
// explicit (Clone) so that hot paths cannot copy by accident.
//
// Thread-safety: none; a ParamVector is owned by one node or one task at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <Eigen/Core>

#include "core/gemm.h"

#include "core/status.h"

namespace murmur {

inline constexpr std::size_t kParamAlignment = 64;

// One named tensor inside a ParamVector: elements [offset, offset + size),
// row-major with the given shape.
struct TensorSpec {
  std::string name;
  std::vector<std::int64_t> shape;
  std::size_t offset = 0;
  std::size_t size = 0;

  // A matrix view needs exactly two dimensions.
  bool is_matrix() const { return shape.size() == 2; }
  std::int64_t rows() const { return shape.empty() ? 1 : shape[0]; }
  // Product of every dimension after the first (1 for a vector).
  std::int64_t cols() const;
};

// The tensors of a model, in order, packed back to back.
class Layout {
 public:
  Layout() = default;

  // Appends a tensor after the last one and returns its index.
  // REQUIRES: every dimension > 0.
  std::size_t Add(std::string name, std::vector<std::int64_t> shape);

  std::size_t num_tensors() const { return tensors_.size(); }
  const TensorSpec& tensor(std::size_t i) const { return tensors_.at(i); }
  const std::vector<TensorSpec>& tensors() const { return tensors_; }
  std::size_t total_size() const { return total_size_; }

  // Index of the tensor called `name`, or NotFound.
  Result<std::size_t> Find(const std::string& name) const;

  friend bool operator==(const Layout& a, const Layout& b);

 private:
  std::vector<TensorSpec> tensors_;
  std::size_t total_size_ = 0;
};

using VectorMap = Eigen::Map<Eigen::VectorXf, Eigen::Aligned64>;
using ConstVectorMap = Eigen::Map<const Eigen::VectorXf, Eigen::Aligned64>;
using RowMatrixXf = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using MatrixMap = Eigen::Map<RowMatrixXf>;
using ConstMatrixMap = Eigen::Map<const RowMatrixXf>;

class ParamVector {
 public:
  ParamVector() = default;
  // Zero-initialized vector of `size` floats with a single tensor "flat".
  explicit ParamVector(std::size_t size);
  // Zero-initialized vector shaped by `layout`.
  explicit ParamVector(Layout layout);

  ParamVector(ParamVector&&) noexcept = default;
  ParamVector& operator=(ParamVector&&) noexcept = default;
  ParamVector(const ParamVector&) = delete;
  ParamVector& operator=(const ParamVector&) = delete;

  // A deep copy (the only way to copy).
  ParamVector Clone() const;
  // Copies values from `other`. REQUIRES: other.size() == size().
  void CopyFrom(const ParamVector& other);

  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  float* data() { return data_.get(); }
  const float* data() const { return data_.get(); }
  float& operator[](std::size_t i) { return data_[i]; }
  float operator[](std::size_t i) const { return data_[i]; }
  std::span<float> span() { return {data_.get(), size_}; }
  std::span<const float> span() const { return {data_.get(), size_}; }

  const Layout& layout() const { return layout_; }

  VectorMap vec() { return VectorMap(data_.get(), static_cast<Eigen::Index>(size_)); }
  ConstVectorMap vec() const { return ConstVectorMap(data_.get(), static_cast<Eigen::Index>(size_)); }

  // The elements of tensor `i` as a flat span.
  std::span<float> tensor_span(std::size_t i);
  std::span<const float> tensor_span(std::size_t i) const;
  // Tensor `i` as a row-major matrix rows() x cols(); a 1-D tensor of n elements is n x 1.
  MatrixMap matrix(std::size_t i);
  ConstMatrixMap matrix(std::size_t i) const;
  // Tensor i as a row-major rows() x cols() view for core/gemm.h.
  MatrixView matrix_view(std::size_t i) const {
    const TensorSpec& t = layout_.tensor(i);
    return MatrixView::RowMajor(data_.get() + t.offset, t.rows(), t.cols());
  }

  void SetZero();

 private:
  struct FreeDeleter {
    void operator()(float* p) const;
  };
  std::unique_ptr<float[], FreeDeleter> data_;
  std::size_t size_ = 0;
  Layout layout_;
};

}  // namespace murmur
