// Which backend serves each device type. The CPU backend registers itself when the runtime
// loads; every other backend is a shared library, libamber_<type>.so (libamber_cuda.so,
// libamber_sim.so), dlopen()ed the first time a device of its type is asked for, so
// CPU-only processes never map the CUDA runtime, cuDNN or cuBLAS.
#pragma once

#include "amber/core/backend.h"
#include "amber/core/device.h"

namespace amber {

void register_backend(DeviceType type, const amber_backend* backend);
// The backend for device, loading it on first use; throws amber::Error naming what is
// missing (backend library, driver, device index). The library is looked for beside the
// runtime, then on the loader's search path; AMBER_<TYPE>_BACKEND (AMBER_CUDA_BACKEND,
// AMBER_SIM_BACKEND) names a file to try first.
const amber_backend& backend(Device device);
// The backend for type if it is already registered, else nullptr. Never loads anything.
const amber_backend* backend_if_loaded(DeviceType type);

// Copies nbytes from src on one device to dst on another (or the same) on the default
// streams, and waits for it: through the device's backend, or through host memory between
// two device types. Throws amber::Error "what: copying ... failed: ...".
void copy_between_devices(void* dst, Device dst_device, const void* src, Device src_device, size_t nbytes,
                          const char* what);

}  // namespace amber
