// Tensor: a handle to sizes, strides and an offset into a shared Storage. Copying a Tensor
// shares everything (as in PyTorch); views share the storage with new metadata. Metadata
// never changes after creation. Methods that compute (views, arithmetic, casts) are
// declared here and implemented in schema/eager.cpp: every one of them goes through the
// dispatcher so the tracer sees it.
#pragma once

#include <cstring>
#include <initializer_list>
#include <ostream>
#include <string>
#include <vector>

#include "amber/core/dtype.h"
#include "amber/core/error.h"
#include "amber/core/meta.h"
#include "amber/core/scalar.h"
#include "amber/core/shape.h"
#include "amber/core/src_loc.h"
#include "amber/core/storage.h"

namespace amber {

class TensorImpl final : public RefCounted {
 public:
  Storage storage;
  TensorMeta meta;     // dtype and sizes, as the op table's inference sees them
  DimVec strides;      // in elements
  int64_t offset = 0;  // in elements
  int64_t numel = 0;
  bool contiguous = true;
  SrcLoc origin = SrcLoc::none();  // where a user factory created it, for trace constants
};

struct TensorOptions {
  DType dtype = DType::f32;
  Device device = Device::cpu();
  TensorOptions() = default;
  TensorOptions(DType t) : dtype(t) {}
  TensorOptions(Device d) : device(d) {}
  TensorOptions(DType t, Device d) : dtype(t), device(d) {}
};

class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(Ref<TensorImpl> impl) : impl_(std::move(impl)) {}
  // A tensor over storage with the given layout. Checks that every element addressed lies
  // inside the storage.
  static Tensor make(Storage storage, const DimVec& sizes, const DimVec& strides, int64_t offset, DType dtype);

  bool defined() const { return bool(impl_); }
  TensorImpl* impl() const { return impl_.get(); }
  int dim() const { return impl_->meta.sizes.size(); }
  const DimVec& sizes() const { return impl_->meta.sizes; }
  const DimVec& strides() const { return impl_->strides; }
  int64_t size(int64_t d) const;    // negative d counts from the end
  int64_t stride(int64_t d) const;  // negative d counts from the end
  int64_t numel() const { return impl_->numel; }
  DType dtype() const { return impl_->meta.dtype; }
  Device device() const { return impl_->storage.device(); }
  int64_t storage_offset() const { return impl_->offset; }
  bool is_contiguous() const { return impl_->contiguous; }
  // NHWC memory for an NCHW shape (see MemoryFormat); contiguous() makes it NCHW.
  bool is_channels_last() const { return impl_->meta.format == MemoryFormat::channels_last; }
  size_t itemsize() const { return amber::itemsize(impl_->meta.dtype); }
  size_t nbytes() const { return size_t(numel()) * itemsize(); }
  const Storage& storage() const { return impl_->storage; }
  bool is_read_only() const { return impl_->storage.read_only(); }
  bool is_same(const Tensor& o) const { return impl_.get() == o.impl_.get(); }
  int64_t use_count() const { return impl_ ? impl_->use_count() : 0; }
  SrcLoc origin() const { return impl_->origin; }
  const TensorMeta& meta() const { return impl_->meta; }

  // Address of the first element. mutable_data() refuses read-only storage (for example
  // weights mapped from an archive).
  const void* data() const;
  void* mutable_data() const;
  template <typename T>
  const T* const_data_ptr(SrcLoc loc = {}) const {
    check_dtype_access(dtype_v<T>);
    notify_host_access("const_data_ptr()", loc);
    return static_cast<const T*>(data());
  }
  // During a trace, raw pointers are host accesses: what is read is baked into the trace,
  // and what is written in place is not recorded.
  template <typename T>
  T* data_ptr(SrcLoc loc = {}) const {
    check_dtype_access(dtype_v<T>);
    notify_host_access("data_ptr() (an in-place write through it is not recorded)", loc);
    return static_cast<T*>(mutable_data());
  }

  // Host reads. Each converts the element(s) to T. During a trace they are recorded as a
  // warning naming the caller's line (the value read is baked into the trace).
  template <typename T>
  T item(SrcLoc loc = {}) const {
    T out;
    read_elements(&out, dtype_v<T>, "item()", loc, /*single=*/true, nullptr, 0);
    return out;
  }
  template <typename T>
  T at(std::initializer_list<int64_t> index, SrcLoc loc = {}) const {
    T out;
    read_elements(&out, dtype_v<T>, "at()", loc, true, index.begin(), index.size());
    return out;
  }
  template <typename T>
  std::vector<T> to_vector(SrcLoc loc = {}) const {
    std::vector<T> out(static_cast<size_t>(numel()));
    if constexpr (std::is_same_v<T, bool>) {
      std::unique_ptr<bool[]> tmp(new bool[out.size()]);
      read_elements(tmp.get(), DType::b8, "to_vector()", loc, false, nullptr, 0);
      for (size_t i = 0; i < out.size(); ++i) out[i] = tmp[i];
    } else {
      read_elements(out.data(), dtype_v<T>, "to_vector()", loc, false, nullptr, 0);
    }
    return out;
  }

  // PyTorch-style text: tensor([[1., 2.], [3., 4.]]).
  std::string str() const;

  // ---- Views (no copy; results share storage). ----
  Tensor view(const DimVec& sizes, SrcLoc loc = {}) const;
  Tensor reshape(const DimVec& sizes, SrcLoc loc = {}) const;  // view when possible, else copy
  Tensor permute(const DimVec& dims, SrcLoc loc = {}) const;
  Tensor transpose(int64_t dim0, int64_t dim1, SrcLoc loc = {}) const;
  Tensor t(SrcLoc loc = {}) const;  // transpose of a matrix
  Tensor slice(int64_t dim, int64_t start, int64_t end, int64_t step = 1, SrcLoc loc = {}) const;
  Tensor select(int64_t dim, int64_t index, SrcLoc loc = {}) const;
  Tensor operator[](int64_t index) const { return select(0, index, SrcLoc::none()); }
  Tensor unsqueeze(int64_t dim, SrcLoc loc = {}) const;
  Tensor squeeze(SrcLoc loc = {}) const;
  Tensor squeeze(int64_t dim, SrcLoc loc = {}) const;
  Tensor expand(const DimVec& sizes, SrcLoc loc = {}) const;
  Tensor flatten(int64_t start_dim = 0, int64_t end_dim = -1, SrcLoc loc = {}) const;
  Tensor contiguous(SrcLoc loc = {}) const;  // self when already contiguous

  // ---- Copies and conversions. ----
  Tensor to(DType dtype, SrcLoc loc = {}) const;  // self when the dtype already matches
  Tensor to(Device device, SrcLoc loc = {}) const;
  Tensor clone(SrcLoc loc = {}) const;

  // ---- Arithmetic (see schema/eager.h for the free-function forms). ----
  Tensor add(const Tensor& other, Scalar alpha = 1, SrcLoc loc = {}) const;
  Tensor add(Scalar other, Scalar alpha = 1, SrcLoc loc = {}) const;
  Tensor sub(const Tensor& other, Scalar alpha = 1, SrcLoc loc = {}) const;
  Tensor sub(Scalar other, Scalar alpha = 1, SrcLoc loc = {}) const;
  Tensor mul(const Tensor& other, SrcLoc loc = {}) const;
  Tensor mul(Scalar other, SrcLoc loc = {}) const;
  Tensor div(const Tensor& other, SrcLoc loc = {}) const;
  Tensor div(Scalar other, SrcLoc loc = {}) const;
  Tensor neg(SrcLoc loc = {}) const;
  Tensor exp(SrcLoc loc = {}) const;
  Tensor tanh(SrcLoc loc = {}) const;
  Tensor relu(SrcLoc loc = {}) const;
  Tensor sum(SrcLoc loc = {}) const;
  Tensor sum(const DimVec& dims, bool keepdim = false, SrcLoc loc = {}) const;
  Tensor mm(const Tensor& other, SrcLoc loc = {}) const;
  Tensor matmul(const Tensor& other, SrcLoc loc = {}) const;
  Tensor bmm(const Tensor& other, SrcLoc loc = {}) const;
  Tensor pow(Scalar exponent, SrcLoc loc = {}) const;
  Tensor abs(SrcLoc loc = {}) const;
  Tensor sqrt(SrcLoc loc = {}) const;
  Tensor log(SrcLoc loc = {}) const;
  Tensor sigmoid(SrcLoc loc = {}) const;
  Tensor softmax(int64_t dim, SrcLoc loc = {}) const;
  Tensor log_softmax(int64_t dim, SrcLoc loc = {}) const;
  Tensor mean(SrcLoc loc = {}) const;
  Tensor mean(const DimVec& dims, bool keepdim = false, SrcLoc loc = {}) const;
  Tensor prod(const DimVec& dims = {}, bool keepdim = false, SrcLoc loc = {}) const;
  Tensor amax(const DimVec& dims = {}, bool keepdim = false, SrcLoc loc = {}) const;
  Tensor argmax(SrcLoc loc = {}) const;
  Tensor argmax(int64_t dim, bool keepdim = false, SrcLoc loc = {}) const;
  std::vector<Tensor> chunk(int64_t chunks, int64_t dim = 0, SrcLoc loc = {}) const;
  std::vector<Tensor> split(int64_t split_size, int64_t dim = 0, SrcLoc loc = {}) const;
  Tensor index_select(int64_t dim, const Tensor& index, SrcLoc loc = {}) const;

 private:
  void check_dtype_access(DType want) const;
  void notify_host_access(const char* what, SrcLoc loc) const;
  // Copies one element (single) or all elements in logical order to out, converted to
  // out_dtype; notifies the trace hook.
  void read_elements(void* out, DType out_dtype, const char* what, SrcLoc loc, bool single, const int64_t* index,
                     size_t index_len) const;

  Ref<TensorImpl> impl_;
};

std::ostream& operator<<(std::ostream& os, const Tensor& t);

// ---- Factories that need no kernel. ----
// Uninitialised memory, contiguous or (4-D only) channels-last.
Tensor empty(const DimVec& sizes, TensorOptions options = {}, MemoryFormat format = MemoryFormat::contiguous);
// A tensor over memory the caller owns: the caller keeps data alive and unchanged for as
// long as any tensor uses it. Contiguous unless strides are given.
Tensor from_blob(void* data, const DimVec& sizes, TensorOptions options = {});
Tensor from_blob(void* data, const DimVec& sizes, const DimVec& strides, TensorOptions options);
// Ownership passes to Amber: deleter(data) runs when the last tensor using it goes away.
Tensor from_blob(void* data, const DimVec& sizes, StorageImpl::Deleter deleter, TensorOptions options = {});
// A CPU tensor holding a copy of values, shaped by sizes (1-D when sizes is empty).
template <typename T>
Tensor tensor(std::initializer_list<T> values, const DimVec& sizes = {}, SrcLoc loc = {});
template <typename T>
Tensor tensor(const std::vector<T>& values, const DimVec& sizes = {}, SrcLoc loc = {});
// Copies raw elements of the given dtype into a new CPU tensor.
Tensor tensor_from_raw(const void* data, DType dtype, const DimVec& sizes, SrcLoc loc = SrcLoc::none());

template <typename T>
Tensor tensor(const std::vector<T>& values, const DimVec& sizes, SrcLoc loc) {
  DimVec shape = sizes.empty() ? DimVec{int64_t(values.size())} : sizes;
  if constexpr (std::is_same_v<T, bool>) {
    std::vector<uint8_t> bytes(values.begin(), values.end());
    return tensor_from_raw(bytes.data(), DType::b8, shape, loc);
  } else {
    AMBER_CHECK(checked_numel(shape) == int64_t(values.size()), "tensor(): ", values.size(),
                " values do not fill shape ", shape);
    return tensor_from_raw(values.data(), dtype_v<T>, shape, loc);
  }
}
template <typename T>
Tensor tensor(std::initializer_list<T> values, const DimVec& sizes, SrcLoc loc) {
  return tensor(std::vector<T>(values), sizes, loc);
}

// The hook host reads and random factories report to while a trace is active on the
// calling thread (the tracer installs it; see schema/dispatcher.h for the op hook).
class HostAccessHook {
 public:
  virtual ~HostAccessHook() = default;
  virtual void on_host_read(const Tensor& t, const char* what, SrcLoc loc) = 0;
  virtual void on_random(const Tensor& t, const char* what, SrcLoc loc) = 0;
  // `to` copied src to another device, giving dst (not an op: archives are device-independent).
  virtual void on_device_copy(const Tensor& src, const Tensor& dst) {}
};
HostAccessHook*& tls_host_access_hook();

// Converts n contiguous elements between dtypes on the host (PyTorch's casting rules:
// float to int truncates toward zero, anything nonzero to bool is true).
void convert_elements(const void* src, DType src_dtype, void* dst, DType dst_dtype, int64_t n);

}  // namespace amber
