// SmallVector<T, N>: a vector that keeps up to N elements inline and moves to the heap
// beyond that. Used on the dispatch hot path, where most ops have a handful of operands.
#pragma once

#include <cstddef>
#include <new>
#include <utility>
#include <vector>

namespace amber {

template <typename T, size_t N>
class SmallVector {
 public:
  SmallVector() = default;
  SmallVector(const SmallVector&) = delete;
  SmallVector& operator=(const SmallVector&) = delete;
  ~SmallVector() { clear(); }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  T* data() { return heap_.empty() ? inline_ptr() : heap_.data(); }
  const T* data() const { return heap_.empty() ? inline_ptr() : heap_.data(); }
  T& operator[](size_t i) { return data()[i]; }
  const T& operator[](size_t i) const { return data()[i]; }
  T* begin() { return data(); }
  T* end() { return data() + size_; }
  const T* begin() const { return data(); }
  const T* end() const { return data() + size_; }
  T& back() { return data()[size_ - 1]; }

  template <typename... Args>
  T& emplace_back(Args&&... args) {
    if (heap_.empty() && size_ < N) {
      T* p = new (inline_ptr() + size_) T(std::forward<Args>(args)...);
      ++size_;
      return *p;
    }
    if (heap_.empty()) spill();
    heap_.emplace_back(std::forward<Args>(args)...);
    ++size_;
    return heap_.back();
  }
  void push_back(T v) { emplace_back(std::move(v)); }
  void clear() {
    if (heap_.empty()) {
      for (size_t i = 0; i < size_; ++i) inline_ptr()[i].~T();
    } else {
      heap_.clear();
    }
    size_ = 0;
  }

 private:
  T* inline_ptr() { return std::launder(reinterpret_cast<T*>(buf_)); }
  const T* inline_ptr() const { return std::launder(reinterpret_cast<const T*>(buf_)); }
  void spill() {
    heap_.reserve(N * 2);
    for (size_t i = 0; i < size_; ++i) {
      heap_.push_back(std::move(inline_ptr()[i]));
      inline_ptr()[i].~T();
    }
  }
  alignas(T) unsigned char buf_[sizeof(T) * N];
  size_t size_ = 0;
  std::vector<T> heap_;
};

}  // namespace amber
