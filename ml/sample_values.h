// SampleValues: the sample values of a Dataset (ml/dataset.h), either owned
// (a vector, which the readers fill) or a read-only view of memory that
// something else keeps alive: one copy of a dataset mapped by every rank of a
// host (sim/ranks/host_data.h). Reading is the same either way. Writing to a view
// first copies it into owned memory (copy on write), so no writer can change
// what other processes read.
//
// Thread-safety: as a std::vector; a view's memory is never written.
#pragma once

#include <algorithm>
#include <cstddef>
#include <memory>
#include <vector>

namespace murmur::ml {

template <typename T>
class SampleValues {
 public:
  SampleValues() = default;
  // A view of [data, data + size), alive as long as `owner` is.
  static SampleValues View(const T* data, std::size_t size, std::shared_ptr<const void> owner) {
    SampleValues v;
    v.view_ = data;
    v.view_size_ = size;
    v.owner_ = std::move(owner);
    return v;
  }

  bool is_view() const { return view_ != nullptr; }
  std::size_t size() const { return view_ != nullptr ? view_size_ : own_.size(); }
  bool empty() const { return size() == 0; }
  const T* data() const { return view_ != nullptr ? view_ : own_.data(); }
  const T* begin() const { return data(); }
  const T* end() const { return data() + size(); }
  const T& operator[](std::size_t i) const { return data()[i]; }

  // Writing (copies a view first).
  T* data() { return Own().data(); }
  T* begin() { return Own().data(); }
  T* end() { return Own().data() + own_.size(); }
  T& operator[](std::size_t i) { return Own()[i]; }
  void resize(std::size_t n) { Own().resize(n); }
  void assign(std::size_t n, const T& value) { Own().assign(n, value); }
  void reserve(std::size_t n) { Own().reserve(n); }
  void push_back(const T& value) { Own().push_back(value); }
  // Appends [first, last). REQUIRES: at == end().
  template <typename It>
  void insert(const T* at, It first, It last) {
    (void)at;
    Own().insert(own_.end(), first, last);
  }
  // Bytes held by this process (a view's are another's).
  std::size_t owned_bytes() const { return view_ != nullptr ? 0 : own_.size() * sizeof(T); }

  friend bool operator==(const SampleValues& a, const SampleValues& b) {
    return std::equal(a.begin(), a.end(), b.begin(), b.end());
  }

 private:
  std::vector<T>& Own() {
    if (view_ != nullptr) {
      own_.assign(view_, view_ + view_size_);
      view_ = nullptr;
      owner_.reset();
    }
    return own_;
  }

  std::vector<T> own_;
  const T* view_ = nullptr;
  std::size_t view_size_ = 0;
  std::shared_ptr<const void> owner_;
};

}  // namespace murmur::ml
