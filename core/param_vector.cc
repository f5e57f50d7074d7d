#include "core/param_vector.h"

#include <cstdlib>
#include <cstring>
#include <new>

namespace murmur {

std::int64_t TensorSpec::cols() const {
  std::int64_t c = 1;
  for (std::size_t d = 1; d < shape.size(); ++d) c *= shape[d];
  return c;
}

std::size_t Layout::Add(std::string name, std::vector<std::int64_t> shape) {
  std::size_t n = 1;
  for (std::int64_t d : shape) {
    MURMUR_CHECK_MSG(d > 0, "tensor dimensions must be positive");
    n *= static_cast<std::size_t>(d);
  }
  tensors_.push_back(TensorSpec{std::move(name), std::move(shape), total_size_, n});
  total_size_ += n;
  return tensors_.size() - 1;
}

Result<std::size_t> Layout::Find(const std::string& name) const {
  for (std::size_t i = 0; i < tensors_.size(); ++i) {
    if (tensors_[i].name == name) return i;
  }
  return Status::NotFound("no tensor named '" + name + "' in layout");
}

bool operator==(const Layout& a, const Layout& b) {
  if (a.tensors_.size() != b.tensors_.size()) return false;
  for (std::size_t i = 0; i < a.tensors_.size(); ++i) {
    if (a.tensors_[i].name != b.tensors_[i].name || a.tensors_[i].shape != b.tensors_[i].shape) return false;
  }
  return true;
}

void ParamVector::FreeDeleter::operator()(float* p) const { std::free(p); }

namespace {
float* AllocateAligned(std::size_t n) {
  if (n == 0) return nullptr;
  // aligned_alloc requires the size to be a multiple of the alignment.
  std::size_t bytes = (n * sizeof(float) + kParamAlignment - 1) / kParamAlignment * kParamAlignment;
  void* p = std::aligned_alloc(kParamAlignment, bytes);
  if (p == nullptr) throw std::bad_alloc();
  std::memset(p, 0, bytes);
  return static_cast<float*>(p);
}
}  // namespace

ParamVector::ParamVector(std::size_t size) : data_(AllocateAligned(size)), size_(size) {
  if (size > 0) layout_.Add("flat", {static_cast<std::int64_t>(size)});
}

ParamVector::ParamVector(Layout layout)
    : data_(AllocateAligned(layout.total_size())), size_(layout.total_size()), layout_(std::move(layout)) {}

ParamVector ParamVector::Clone() const {
  ParamVector out(layout_);
  if (size_ > 0) std::memcpy(out.data(), data(), size_ * sizeof(float));
  return out;
}

void ParamVector::CopyFrom(const ParamVector& other) {
  MURMUR_CHECK(other.size_ == size_);
  if (size_ > 0) std::memcpy(data(), other.data(), size_ * sizeof(float));
}

std::span<float> ParamVector::tensor_span(std::size_t i) {
  const TensorSpec& t = layout_.tensor(i);
  return {data_.get() + t.offset, t.size};
}

std::span<const float> ParamVector::tensor_span(std::size_t i) const {
  const TensorSpec& t = layout_.tensor(i);
  return {data_.get() + t.offset, t.size};
}

MatrixMap ParamVector::matrix(std::size_t i) {
  const TensorSpec& t = layout_.tensor(i);
  return MatrixMap(data_.get() + t.offset, t.rows(), t.cols());
}

ConstMatrixMap ParamVector::matrix(std::size_t i) const {
  const TensorSpec& t = layout_.tensor(i);
  return ConstMatrixMap(data_.get() + t.offset, t.rows(), t.cols());
}

void ParamVector::SetZero() {
  if (size_ > 0) std::memset(data(), 0, size_ * sizeof(float));
}

}  // namespace murmur
