/* The device-backend interface: a plain C function table (memory, copies, synchronisation,
 * kernel lookup) and the C view of tensors and attributes that kernels receive. The CPU
 * backend implements it inside the runtime; the CUDA backend is a separate shared library
 * exporting amber_backend_entry(). Only C types cross this boundary, so no C++ registry is
 * shared between libraries. Bump AMBER_BACKEND_ABI_VERSION on any change to these structs. */
#ifndef AMBER_CORE_BACKEND_H
#define AMBER_CORE_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define AMBER_BACKEND_ABI_VERSION 2
#define AMBER_MAX_DIMS 8

/* A tensor as a kernel sees it. Strides are in elements. An absent optional tensor has
 * ndim == -1 and data == NULL. dtype and device_type use amber::DType / amber::DeviceType
 * codes. */
typedef struct amber_tensor_view {
  void* data;
  int32_t dtype;
  int32_t ndim;
  int64_t sizes[AMBER_MAX_DIMS];
  int64_t strides[AMBER_MAX_DIMS];
  /* Nonzero only when the memory is immutable for the life of the process (read-only
   * storage): a backend may then cache data derived from it (reordered weights) keyed by
   * (cache_id, data, sizes, strides). Zero: the contents may change between calls. */
  uint64_t cache_id;
} amber_tensor_view;

typedef enum amber_attr_kind {
  AMBER_ATTR_NONE = 0, /* an optional attribute that was not given */
  AMBER_ATTR_INT = 1,
  AMBER_ATTR_FLOAT = 2,
  AMBER_ATTR_BOOL = 3, /* value in i */
  AMBER_ATTR_INTS = 4,
  AMBER_ATTR_FLOATS = 5,
  AMBER_ATTR_STRING = 6,
  AMBER_ATTR_DTYPE = 7 /* value in i */
} amber_attr_kind;

/* One attribute, in the op table's argument order. Scalars are INT or FLOAT. */
typedef struct amber_attr {
  int32_t kind;
  int32_t count; /* element count for INTS/FLOATS, byte length for STRING */
  int64_t i;
  double f;
  const int64_t* ints;
  const double* floats;
  const char* str; /* NUL-terminated */
} amber_attr;

/* Everything one kernel call needs. Outputs are allocated by the caller with the shapes
 * the op table's inference gives; kernels write them and never allocate outputs. Inputs
 * already have the op's compute dtype. On failure a kernel writes a message to error
 * (at most error_capacity bytes, NUL-terminated) and returns non-zero. */
typedef struct amber_kernel_args {
  const amber_tensor_view* inputs;
  int32_t n_inputs;
  int32_t n_outputs;
  const amber_tensor_view* outputs;
  const amber_attr* attrs;
  int32_t n_attrs;
  int32_t num_threads; /* intra-op threads the kernel may use (CPU) */
  void* stream;        /* backend stream, NULL for the default one */
  char* error;
  size_t error_capacity;
} amber_kernel_args;

typedef int (*amber_kernel_fn)(const amber_kernel_args* args);

typedef struct amber_backend {
  uint32_t abi_version; /* AMBER_BACKEND_ABI_VERSION */
  uint32_t struct_size; /* sizeof(amber_backend) of the producer */
  const char* name;
  /* Number of devices; 0 with last_error set when the driver is missing. */
  int32_t (*device_count)(void);
  /* Returns NULL on failure (out of memory: last_error names bytes asked and free). */
  void* (*allocate)(int32_t device, size_t nbytes);
  void (*deallocate)(int32_t device, void* ptr);
  /* Copies nbytes; each side's device type is amber::DeviceType. Returns 0 on success. */
  int (*copy)(void* dst, int32_t dst_type, int32_t dst_device, const void* src, int32_t src_type, int32_t src_device,
              size_t nbytes, void* stream);
  int (*synchronize)(int32_t device, void* stream);
  /* Kernel for op name, op version and compute dtype, or NULL when there is none. */
  amber_kernel_fn (*lookup_kernel)(const char* op, int32_t version, int32_t dtype);
  /* Message describing the last failure on the calling thread. */
  const char* (*last_error)(void);
  /* The one-time setup of a kernel, or NULL when it has none: called by the loader with
   * the arguments of a node (inputs that are not constants may have data == NULL), it
   * builds what later calls reuse (compiled primitives, weights reordered into the
   * kernel's layout) without computing, so a model's first call runs at full speed.
   * Returns 0 on success; a failure is reported like a kernel's. */
  amber_kernel_fn (*lookup_prepare)(const char* op, int32_t version, int32_t dtype);
} amber_backend;

/* The symbol a backend shared library exports. */
typedef const amber_backend* (*amber_backend_entry_fn)(void);

#ifdef __cplusplus
}
#endif

#endif /* AMBER_CORE_BACKEND_H */
