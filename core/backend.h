/* The device-backend interface: a plain C function table (memory, copies, fills, streams,
 * synchronisation, kernel lookup) and the C view of tensors, attributes and fused programs
 * that kernels receive. The CPU backend implements it inside the runtime; other backends
 * are shared libraries exporting amber_backend_entry(). Only C types cross this boundary, so
 * no C++ registry is shared between libraries. Bump AMBER_BACKEND_ABI_VERSION on any change. */
#ifndef AMBER_CORE_BACKEND_H
#define AMBER_CORE_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "amber/core/fused_ops.h"

#ifdef __cplusplus
extern "C" {
#endif

#define AMBER_BACKEND_ABI_VERSION 11
#define AMBER_MAX_DIMS 8

/* A tensor as a kernel sees it. Strides are in elements. An absent optional tensor has
 * ndim == -1 and data == NULL. dtype uses amber::DType codes. */
typedef struct amber_tensor_view {
  void* data;
  int32_t dtype;
  int32_t ndim;
  int64_t sizes[AMBER_MAX_DIMS];
  int64_t strides[AMBER_MAX_DIMS];
  /* Nonzero when the memory is immutable for as long as any kernel state made from this view
   * lives (a loaded model's weights, read-only storage); it names that storage. A kernel's
   * setup may then derive data from the contents (weights packed into its own layout). Zero:
   * the contents may change between calls, and only shapes may be used at setup. */
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
  int64_t i;     /* STRING: its index among the signature's choices, str{a,b} (else -1) */
  double f;
  const int64_t* ints;
  const double* floats;
  const char* str; /* NUL-terminated */
} amber_attr;

/* ---- Fused pointwise programs (the `fused` op), as data ----
 * Built once by the caller (when a node is planned, or per eager call) from the node's
 * program text, so kernels never parse text. Each instruction computes one f32 result from
 * up to three operands: the node's inputs, earlier results, or immediates. The last result
 * is the output. The formulas are docs/OPS.md's. */
#define AMBER_FUSED_OPCODE(OPCODE, name, arity, kind) AMBER_FUSED_##OPCODE,
typedef enum amber_fused_opcode {
  AMBER_FUSED_OPS(AMBER_FUSED_OPCODE) /* core/fused_ops.h: AMBER_FUSED_ADD = 0, ... */
  AMBER_FUSED_NUM_OPCODES
} amber_fused_opcode;
#undef AMBER_FUSED_OPCODE

typedef enum amber_fused_operand_kind {
  AMBER_OPERAND_INPUT = 0, /* index: the node's input */
  AMBER_OPERAND_TEMP = 1,  /* index: an earlier instruction's result */
  AMBER_OPERAND_IMM = 2    /* imm */
} amber_fused_operand_kind;

typedef struct amber_fused_operand {
  int32_t kind;
  int32_t index;
  float imm;
} amber_fused_operand;

typedef struct amber_fused_instr {
  int32_t op;    /* amber_fused_opcode */
  int32_t arity; /* operands used: a, then b, then c */
  amber_fused_operand a, b, c;
} amber_fused_instr;

typedef struct amber_fused_program {
  const amber_fused_instr* instrs;
  int32_t n_instrs; /* at least 1 */
  int32_t n_inputs;
} amber_fused_program;

/* amber_kernel_args::precision: the arithmetic a kernel may use, chosen at load. */
typedef enum amber_precision {
  AMBER_PRECISION_F32 = 0, /* the op's compute dtype throughout */
  /* Convolutions and matrix products whose weights are immutable (cache_id != 0) may multiply
   * in bf16 with f32 accumulation: weights converted once, at setup; activations converted as
   * they enter; outputs f32. Only backends with AMBER_BACKEND_BF16 are given it. */
  AMBER_PRECISION_BF16 = 1,
  /* Dynamic int8: linear layers and convolutions whose weights are immutable may multiply
   * 8-bit integers with int32 accumulation: weights quantized once, at setup (symmetric int8, a
   * scale per output channel); each call's sources quantized as they enter (uint8 with a scale
   * and zero point from their own range: per row for a linear layer, per image for a
   * convolution); outputs f32. Everything else computes as AMBER_PRECISION_F32. Only backends
   * with AMBER_BACKEND_INT8 are given it. */
  AMBER_PRECISION_DYNAMIC_INT8 = 2,
  /* TF32: matrix products and convolutions may multiply on tensor cores with their f32
   * inputs rounded to TF32 (10 explicit mantissa bits) and f32 accumulation; all data stays
   * f32. Only backends with AMBER_BACKEND_TF32 are given it. */
  AMBER_PRECISION_TF32 = 3,
  /* As AMBER_PRECISION_BF16 with IEEE half (f16: 11 significant bits, largest finite 65504)
   * in place of bf16: weights converted once, at setup (a layer with a weight out of f16's
   * range stays f32), activations as they enter; outputs f32. Only backends with
   * AMBER_BACKEND_F16 are given it. */
  AMBER_PRECISION_F16 = 4
} amber_precision;

/* The longest reduction (in_features, or in_channels/groups * kH * kW) an int8 product may
 * have: 255 * 127 * k stays below 2^30, so int32 accumulators and their zero-point
 * corrections cannot overflow. Dynamic int8 keeps longer ones in f32; quantized_conv2d and
 * quantized_linear refuse them. */
#define AMBER_MAX_INT8_REDUCTION 33000

/* Everything one kernel call needs. Outputs are allocated by the caller with the shapes the
 * op table's inference gives; kernels write them and never allocate outputs. Inputs already
 * have the op's compute dtype. A backend with asynchronous streams may only queue the work:
 * the caller keeps every buffer alive and untouched until it synchronises the stream. On
 * failure a kernel writes a message to error (at most error_capacity bytes, NUL-terminated)
 * and returns non-zero. */
typedef struct amber_kernel_args {
  const amber_tensor_view* inputs;
  int32_t n_inputs;
  int32_t n_outputs;
  const amber_tensor_view* outputs;
  const amber_attr* attrs;
  int32_t n_attrs;
  int32_t num_threads; /* intra-op threads the kernel may use (CPU) */
  int32_t device;      /* the device index the buffers and the stream belong to */
  void* stream;        /* the call's stream (from stream_create), NULL for the default one */
  char* error;
  size_t error_capacity;
  /* From the kernel's setup (NULL when it has none or it was not run). */
  void* state;
  /* Device scratch memory of at least workspace_bytes, for this call only (what setup asked
   * for; NULL and 0 when nothing was asked or setup was not run). It starts at a multiple of
   * 256 bytes into a device allocation: as aligned as the allocation, up to 256 bytes (what
   * cuBLASLt and cuDNN assume of a workspace). */
  void* workspace;
  size_t workspace_bytes;
  /* The program of a `fused` node, else NULL. */
  const amber_fused_program* program;
  /* The kernel entry's context (amber_kernel::context). */
  const void* context;
  /* What runs, for messages and profiler ranges ("%12 = conv2d (model.cpp:21)"); may be NULL. */
  const char* label;
  /* amber_precision, the same at setup and on every call of a step; kernels without a
   * reduced-precision path ignore it. */
  int32_t precision;
  /* The model's setup scope (amber_backend::scope_create) at setup and on every call of a
   * loaded model's steps; NULL in eager calls and where the backend makes none. */
  void* scope;
} amber_kernel_args;

typedef int (*amber_kernel_fn)(const amber_kernel_args* args);

/* One kernel. setup is optional: called once per plan step (at load) or per eager call
 * signature with the step's arguments (data of inputs that are not immutable may be NULL;
 * state, workspace and stream are NULL), it builds what later calls reuse (compiled
 * primitives, weights packed into the kernel's layout) without computing, returns it in
 * *state (may stay NULL) and the scratch bytes a call needs in *workspace_bytes. The state
 * is then passed to every call of that step, from many threads at once, until
 * destroy_state(state) runs when the model goes: after the graphs that recorded its calls,
 * while the streams its calls ran on (the loader's) still exist. Setup failures are reported
 * like a kernel's. */
typedef struct amber_kernel {
  amber_kernel_fn run;
  int (*setup)(const amber_kernel_args* args, void** state, size_t* workspace_bytes);
  void (*destroy_state)(void* state);
  const void* context; /* passed back as amber_kernel_args::context */
} amber_kernel;

/* amber_backend::flags */
#define AMBER_BACKEND_HOST_MEMORY 1u /* device memory is ordinary host memory (the CPU) */
#define AMBER_BACKEND_BF16 2u        /* kernels honour AMBER_PRECISION_BF16 on this machine */
#define AMBER_BACKEND_INT8 4u        /* kernels honour AMBER_PRECISION_DYNAMIC_INT8 on this machine */
#define AMBER_BACKEND_TF32 8u        /* kernels honour AMBER_PRECISION_TF32 */
#define AMBER_BACKEND_F16 16u        /* kernels honour AMBER_PRECISION_F16 on this machine */
/* kernels may read host_alloc's page-locked memory in place, as inputs (CUDA: unified addressing) */
#define AMBER_BACKEND_KERNELS_READ_PAGE_LOCKED 32u

/* What a backend holds of one device's memory (amber_backend::memory_stats). Held bytes are
 * those allocate returned and deallocate has not taken back: tensors, arenas, weights,
 * kernel states' buffers; a library's own memory (cuDNN's handles) is not in them. */
typedef struct amber_memory_stats {
  uint64_t held_bytes;
  uint64_t peak_held_bytes;    /* the most held at once since the process began or the last reset */
  uint64_t limit_bytes;        /* the cap on held bytes (AMBER_CUDA_MEMORY_LIMIT), 0 when none */
  uint64_t device_free_bytes;  /* what the driver reports free on the device, 0 when unknown */
  uint64_t device_total_bytes; /* the device's whole memory, 0 when unknown */
} amber_memory_stats;

/* amber_backend::allocate flags */
#define AMBER_ALLOC_LONG_LIVED 1u /* kept for the life of a model (arenas, weights) */

typedef struct amber_backend {
  uint32_t abi_version; /* AMBER_BACKEND_ABI_VERSION */
  uint32_t struct_size; /* sizeof(amber_backend) of the producer */
  const char* name;
  uint32_t flags;
  /* Number of devices; 0 with last_error set when the driver is missing. */
  int32_t (*device_count)(void);
  /* Returns NULL on failure (out of memory: last_error names bytes asked and free). */
  void* (*allocate)(int32_t device, size_t nbytes, uint32_t flags);
  /* Frees what allocate returned, given the same nbytes and flags. Work still queued on the
   * device's streams may use the memory: the backend waits for it or defers the reuse. */
  void (*deallocate)(int32_t device, void* ptr, size_t nbytes, uint32_t flags);
  /* Copies nbytes on stream; each side's device type is amber::DeviceType, one of them this
   * backend's. May only queue the copy: host buffers stay untouched until synchronize.
   * Returns 0 on success. */
  int (*copy)(void* dst, int32_t dst_type, int32_t dst_device, const void* src, int32_t src_type, int32_t src_device,
              size_t nbytes, void* stream);
  /* Sets nbytes of device memory to the byte value, on stream. Returns 0 on success. */
  int (*fill)(int32_t device, void* ptr, int value, size_t nbytes, void* stream);
  /* A new stream of device in *stream (NULL for a backend without streams). Returns 0 on
   * success. */
  int (*stream_create)(int32_t device, void** stream);
  void (*stream_destroy)(int32_t device, void* stream);
  /* Waits for everything queued on stream (NULL: the default stream); returns non-zero with
   * last_error set when queued work failed (the stream is usable again afterwards). */
  int (*synchronize)(int32_t device, void* stream);
  /* The kernel for op name, op version and compute dtype, or NULL when there is none. The
   * entry lives as long as the backend. */
  const amber_kernel* (*lookup_kernel)(const char* op, int32_t version, int32_t dtype);
  /* Message describing the last failure on the calling thread. */
  const char* (*last_error)(void);
  /* Device graphs (CUDA graphs); all four NULL where the device has none. capture_begin
   * returns in *stream a new stream whose queued work is recorded instead of run (it orders
   * with no other stream); capture_end stops the recording, destroys that stream and returns
   * the work as a graph that replays it on the same memory, or non-zero with last_error set
   * when something queued could not be recorded (nothing was run). graph_launch queues the
   * graph on any stream of the device. Copies from host memory cannot be recorded, except from
   * host_alloc's memory. */
  int (*capture_begin)(int32_t device, void** stream);
  int (*capture_end)(int32_t device, void* stream, void** graph);
  int (*graph_launch)(int32_t device, void* graph, void* stream);
  void (*graph_destroy)(int32_t device, void* graph);
  /* Fills *stats for device; with reset_peak, then starts the peak again from what is held
   * now. Returns 0 on success. NULL where memory is not tracked (the CPU's). */
  int (*memory_stats)(int32_t device, int reset_peak, amber_memory_stats* stats);
  /* Page-locked host memory for device (CUDA: cudaHostAlloc): copies from it run
   * asynchronously and, unlike copies from other host memory, can be recorded in a graph.
   * host_alloc returns NULL with last_error set on failure; host_free takes what it returned.
   * Both NULL where the device has none (the loader then copies from the caller's memory). */
  void* (*host_alloc)(int32_t device, size_t nbytes);
  void (*host_free)(int32_t device, void* ptr);
  /* Timing marks on the device, for profiles (CUDA: events): event_create returns one (NULL
   * with last_error set on failure), event_record queues it on stream, event_elapsed sets *ms
   * to the milliseconds between two recorded marks once both have run (non-zero with
   * last_error set before that or on failure), event_destroy frees one. All four NULL where
   * the device has none (the CPU): a profile there has host times only. */
  void* (*event_create)(int32_t device);
  int (*event_record)(int32_t device, void* event, void* stream);
  int (*event_elapsed)(int32_t device, void* start, void* end, float* ms);
  void (*event_destroy)(int32_t device, void* event);
  /* A setup scope: made once for each loaded model on device and handed to every setup and
   * call of its steps (all its plans: batch sizes, loop bodies) as amber_kernel_args::scope, so
   * that identical steps share what their setups build (CUDA: a fused program's compiled
   * kernel) without a process-global cache. scope_destroy runs after every state made with it
   * is destroyed. Both NULL where the backend keeps nothing per model; scope_create may return
   * NULL (setups then share nothing). */
  void* (*scope_create)(int32_t device);
  void (*scope_destroy)(int32_t device, void* scope);
} amber_backend;

/* The symbol a backend shared library exports. */
typedef const amber_backend* (*amber_backend_entry_fn)(void);

#ifdef __cplusplus
}
#endif

#endif /* AMBER_CORE_BACKEND_H */
