// Which backend serves each device type. The CPU backend registers itself when the runtime
// loads; the CUDA backend is dlopen()ed from libamber_cuda.so the first time a CUDA device is
// asked for, so CPU-only processes never map the CUDA runtime, cuDNN or cuBLAS.
#pragma once

#include "amber/core/backend.h"
#include "amber/core/device.h"

namespace amber {

void register_backend(DeviceType type, const amber_backend* backend);
// The backend for device, loading it on first use; throws amber::Error naming what is
// missing (backend library, driver, device index).
const amber_backend& backend(Device device);
// The backend for type if it is already registered, else nullptr. Never loads anything.
const amber_backend* backend_if_loaded(DeviceType type);

}  // namespace amber
