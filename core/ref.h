// Ref<T>: an intrusive, thread-safe reference-counted pointer. Storage and tensor metadata
// use it instead of std::shared_ptr to keep handles one pointer wide and allocation-free.
#pragma once

#include <atomic>
#include <cstdint>
#include <utility>

namespace amber {

class RefCounted {
 public:
  RefCounted() = default;
  RefCounted(const RefCounted&) = delete;
  RefCounted& operator=(const RefCounted&) = delete;
  void retain() const { refs_.fetch_add(1, std::memory_order_relaxed); }
  // Returns true when this was the last reference.
  bool release() const { return refs_.fetch_sub(1, std::memory_order_acq_rel) == 1; }
  int64_t use_count() const { return refs_.load(std::memory_order_relaxed); }

 protected:
  ~RefCounted() = default;

 private:
  mutable std::atomic<int64_t> refs_{1};
};

template <typename T>
class Ref {
 public:
  Ref() = default;
  // Adopts a freshly created object (its count starts at one).
  static Ref adopt(T* p) {
    Ref r;
    r.p_ = p;
    return r;
  }
  template <typename... Args>
  static Ref make(Args&&... args) {
    return adopt(new T(std::forward<Args>(args)...));
  }
  Ref(const Ref& o) : p_(o.p_) {
    if (p_) p_->retain();
  }
  Ref(Ref&& o) noexcept : p_(std::exchange(o.p_, nullptr)) {}
  Ref& operator=(const Ref& o) {
    Ref(o).swap(*this);
    return *this;
  }
  Ref& operator=(Ref&& o) noexcept {
    Ref(std::move(o)).swap(*this);
    return *this;
  }
  ~Ref() {
    if (p_ && p_->release()) delete p_;
  }
  void swap(Ref& o) noexcept { std::swap(p_, o.p_); }
  T* get() const { return p_; }
  T* operator->() const { return p_; }
  T& operator*() const { return *p_; }
  explicit operator bool() const { return p_ != nullptr; }

 private:
  T* p_ = nullptr;
};

}  // namespace amber
