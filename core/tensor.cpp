// Tensor metadata, host element access (with device-to-host copies through the backend),
// element conversion and the kernel-free factories (empty, from_blob, tensor).

#include "amber/core/tensor.h"

#include <algorithm>
#include <cstring>
#include <memory>

#include "amber/core/backend_registry.h"
#include "amber/core/dtype_cast.h"
#include "amber/core/hot.h"

namespace amber {

HostAccessHook*& tls_host_access_hook() {
  static thread_local HostAccessHook* hook = nullptr;
  return hook;
}

AMBER_HOT Tensor Tensor::make(Storage storage, const DimVec& sizes, const DimVec& strides, int64_t offset,
                              DType dtype) {
  AMBER_ASSERT(sizes.size() == strides.size(), "sizes ", sizes, " vs strides ", strides);
  auto impl = Ref<TensorImpl>::make();
  impl->numel = checked_numel(sizes);
  // Every addressed element must lie inside the storage: [offset + min, offset + max].
  if (impl->numel > 0) {
    int64_t lo = offset, hi = offset;
    for (int i = 0; i < sizes.size(); ++i) {
      int64_t span = checked_mul(sizes[i] - 1, strides[i], "tensor extent");
      (span < 0 ? lo : hi) = checked_add(span < 0 ? lo : hi, span, "tensor extent");
    }
    const int64_t capacity = int64_t(storage.nbytes() / amber::itemsize(dtype));
    AMBER_CHECK(lo >= 0 && hi < capacity, "tensor of shape ", sizes, " with strides ", strides, " and offset ", offset,
                " addresses elements [", lo, ", ", hi, "] outside its storage of ", capacity, " elements");
  }
  impl->storage = std::move(storage);
  impl->meta.sizes = sizes;
  impl->meta.dtype = dtype;
  impl->strides = strides;
  impl->offset = offset;
  impl->contiguous = amber::is_contiguous(sizes, strides);
  if (amber::is_channels_last(sizes, strides)) impl->meta.format = MemoryFormat::channels_last;
  return Tensor(std::move(impl));
}

// A 0-d tensor has no size or stride to give (wrap_dim accepts dims 0 and -1 for it, as
// ops taking a dim do); PyTorch refuses the same.
int64_t Tensor::size(int64_t d) const {
  AMBER_CHECK(dim() > 0, "Tensor::size: dimension ", d, " asked of a 0-d tensor, which has no dimensions");
  return sizes()[wrap_dim("Tensor::size", d, dim())];
}
int64_t Tensor::stride(int64_t d) const {
  AMBER_CHECK(dim() > 0, "Tensor::stride: dimension ", d, " asked of a 0-d tensor, which has no dimensions");
  return strides()[wrap_dim("Tensor::stride", d, dim())];
}

const void* Tensor::data() const {
  AMBER_CHECK(defined(), "data(): the tensor is undefined");
  auto* base = static_cast<const char*>(impl_->storage.data());
  return base ? base + impl_->offset * int64_t(itemsize()) : nullptr;
}

void* Tensor::mutable_data() const {
  AMBER_CHECK(!is_read_only(), "cannot write to a read-only tensor of shape ", sizes(),
              " (its memory is mapped from an archive or was given read-only); clone() it first");
  return const_cast<void*>(data());
}

void Tensor::notify_host_access(const char* what, SrcLoc loc) const {
  if (HostAccessHook* hook = tls_host_access_hook()) hook->on_host_read(*this, what, loc);
}

void Tensor::check_dtype_access(DType want) const {
  AMBER_CHECK(defined(), "data_ptr(): the tensor is undefined");
  AMBER_CHECK(dtype() == want, "data_ptr<", dtype_name(want), ">(): the tensor has dtype ", dtype());
}

void convert_elements(const void* src, DType src_dtype, void* dst, DType dst_dtype, int64_t n) {
  visit_dtype(src_dtype, [&]<typename S>() {
    visit_dtype(dst_dtype, [&]<typename D>() {
      const S* s = static_cast<const S*>(src);
      D* d = static_cast<D*>(dst);
      for (int64_t i = 0; i < n; ++i) d[i] = cast_value<D>(s[i]);
    });
  });
}

void Tensor::read_elements(void* out, DType out_dtype, const char* what, SrcLoc loc, bool single, const int64_t* index,
                           size_t index_len) const {
  AMBER_CHECK(defined(), what, ": the tensor is undefined");
  if (HostAccessHook* hook = tls_host_access_hook()) hook->on_host_read(*this, what, loc);
  const int nd = dim();
  int64_t elem = impl_->offset;  // element index into storage of the single element
  if (single) {
    if (index) {
      AMBER_CHECK(int(index_len) == nd, what, ": got ", index_len, " indices for a tensor of shape ", sizes());
      for (int i = 0; i < nd; ++i) {
        int64_t ix = index[i] < 0 ? index[i] + sizes()[i] : index[i];
        AMBER_CHECK(ix >= 0 && ix < sizes()[i], what, ": index ", index[i], " is out of range for dimension ", i,
                    " of size ", sizes()[i]);
        elem += ix * strides()[i];
      }
    } else {
      AMBER_CHECK(numel() == 1, what, ": expected a tensor with one element, got shape ", sizes());
    }
  }
  const size_t isz = itemsize();
  // Bring the storage bytes this tensor spans to the host when it lives on a device.
  std::unique_ptr<char[]> host_copy;
  const char* base = static_cast<const char*>(impl_->storage.data());
  if (!device().is_cpu() && numel() > 0) {
    const size_t nbytes = impl_->storage.nbytes();
    host_copy.reset(new char[nbytes]);
    const amber_backend& b = backend(device());
    AMBER_CHECK(b.copy(host_copy.get(), int32_t(DeviceType::cpu), 0, base, int32_t(device().type), device().index,
                       nbytes, nullptr) == 0 &&
                    b.synchronize(device().index, nullptr) == 0,
                what, ": copying from ", device(), " failed: ", b.last_error());
    base = host_copy.get();
  }
  if (single) {
    convert_elements(base + elem * int64_t(isz), dtype(), out, out_dtype, 1);
    return;
  }
  if (numel() == 0) return;
  if (is_contiguous()) {
    convert_elements(base + impl_->offset * int64_t(isz), dtype(), out, out_dtype, numel());
    return;
  }
  // Walk the logical order with an index counter.
  DimVec idx = DimVec::filled(nd, 0);
  char* o = static_cast<char*>(out);
  const size_t osz = amber::itemsize(out_dtype);
  for (int64_t n = 0; n < numel(); ++n) {
    int64_t e = impl_->offset;
    for (int i = 0; i < nd; ++i) e += idx[i] * strides()[i];
    convert_elements(base + e * int64_t(isz), dtype(), o + n * int64_t(osz), out_dtype, 1);
    for (int i = nd - 1; i >= 0; --i) {
      if (++idx[i] < sizes()[i]) break;
      idx[i] = 0;
    }
  }
}

Tensor empty(const DimVec& sizes, TensorOptions options, MemoryFormat format) {
  const int64_t n = checked_numel(sizes);
  const size_t nbytes = size_t(checked_mul(n, int64_t(itemsize(options.dtype)), "empty(): byte size"));
  const bool cl = format == MemoryFormat::channels_last && sizes.size() == 4;
  return Tensor::make(Storage::allocate(nbytes, options.device), sizes,
                      cl ? channels_last_strides(sizes) : contiguous_strides(sizes), 0, options.dtype);
}

Tensor from_blob(void* data, const DimVec& sizes, const DimVec& strides, TensorOptions options) {
  AMBER_CHECK(sizes.size() == strides.size(), "from_blob(): sizes ", sizes, " and strides ", strides,
              " have different ranks");
  int64_t extent = 1;  // elements spanned
  for (int i = 0; i < sizes.size(); ++i) {
    AMBER_CHECK(strides[i] >= 0, "from_blob(): negative strides are not supported, got ", strides);
    if (sizes[i] == 0) extent = 0;
  }
  if (extent != 0 && sizes.size() > 0) {
    extent = 1;
    for (int i = 0; i < sizes.size(); ++i)
      extent = checked_add(extent, checked_mul(sizes[i] - 1, strides[i], "from_blob()"), "from_blob()");
  }
  const size_t nbytes = size_t(checked_mul(extent, int64_t(itemsize(options.dtype)), "from_blob()"));
  return Tensor::make(Storage::wrap(data, nbytes, options.device, nullptr, false), sizes, strides, 0, options.dtype);
}

Tensor from_blob(void* data, const DimVec& sizes, TensorOptions options) {
  return from_blob(data, sizes, contiguous_strides(sizes), options);
}

Tensor from_blob(void* data, const DimVec& sizes, StorageImpl::Deleter deleter, TensorOptions options) {
  const int64_t n = checked_numel(sizes);
  const size_t nbytes = size_t(checked_mul(n, int64_t(itemsize(options.dtype)), "from_blob()"));
  return Tensor::make(Storage::adopt(data, nbytes, options.device, std::move(deleter)), sizes,
                      contiguous_strides(sizes), 0, options.dtype);
}

Tensor tensor_from_raw(const void* data, DType dtype, const DimVec& sizes, SrcLoc loc) {
  Tensor t = empty(sizes, dtype);
  if (t.nbytes()) std::memcpy(t.mutable_data(), data, t.nbytes());
  t.impl()->origin = loc;
  return t;
}

std::ostream& operator<<(std::ostream& os, const SrcLoc& loc) {
  if (!loc.known()) return os << "?";
  const char* f = loc.file;
  if (const char* slash = std::strrchr(f, '/')) f = slash + 1;
  return os << f << ":" << loc.line;
}

std::ostream& operator<<(std::ostream& os, const Scalar& s) {
  if (s.is_bool()) return os << (s.to_int() ? "true" : "false");
  if (s.is_integral()) return os << s.to_int();
  return os << s.to_double();
}

}  // namespace amber
