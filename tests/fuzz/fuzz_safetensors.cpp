// libFuzzer target over the safetensors reader: any bytes must give a file whose every
// tensor can be read, or an amber::Error; never a crash or undefined behaviour.

#include <cstddef>
#include <cstdint>
#include <span>

#include "amber/core/error.h"
#include "amber/serialize/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const amber::SafetensorsFile f = amber::SafetensorsFile::from_buffer(std::span<const uint8_t>(data, size));
    for (const std::string& name : f.names()) {
      const amber::Tensor t = f.tensor(name);
      volatile uint8_t sink = 0;  // touch every byte the tensor claims
      const uint8_t* p = static_cast<const uint8_t*>(t.data());
      for (size_t i = 0; i < t.nbytes(); ++i) sink = sink ^ p[i];
    }
    (void)f.metadata();
  } catch (const amber::Error&) {
  }
  return 0;
}
