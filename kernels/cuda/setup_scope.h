// The CUDA backend's setup scope (amber_backend::scope_create): one per loaded model, handed to
// every setup of its steps, keeping what identical steps share under a key the kernel makes (a
// fused program's generated source: one NVRTC compilation however many nodes and batch-size
// plans run that program). Thread-safe: plans of new sizes are set up during calls.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

namespace amber::cuda {

class SetupScope {
 public:
  // The value kept under key, made by make() the first time: under the scope's lock, so each
  // key is made once even when many threads ask at once. What make returns is kept, null
  // included (a program NVRTC refused is not compiled again). A key names one type T: each
  // kernel prefixes its keys with its own name.
  template <typename T, typename Make>
  std::shared_ptr<T> find_or_make(const std::string& key, Make&& make) {
    std::lock_guard lock(mutex_);
    auto [it, fresh] = values_.try_emplace(key);
    if (fresh) {
      try {
        it->second = std::shared_ptr<T>(std::forward<Make>(make)());
      } catch (...) {
        values_.erase(it);
        throw;
      }
    }
    return std::static_pointer_cast<T>(it->second);
  }

  // Keys kept so far.
  size_t size() const {
    std::lock_guard lock(mutex_);
    return values_.size();
  }

 private:
  mutable std::mutex mutex_;
  std::map<std::string, std::shared_ptr<void>> values_;
};

}  // namespace amber::cuda
