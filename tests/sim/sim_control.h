// Test-side control of the simulated device (libamber_sim.so, tests/sim/sim_backend.cpp):
// its counters and fault injection, reached through the C functions the library exports
// besides amber_backend_entry. The runtime loads the library itself (Device::sim); these
// helpers find the loaded copy (dlopen with RTLD_NOLOAD) after loading it through the
// registry.
#pragma once

#include <cstdint>

extern "C" {
struct amber_sim_counters {
  uint64_t allocations, frees, live_allocations, live_bytes;
  uint64_t uploads, upload_bytes, downloads, download_bytes, device_copies, fills;
  uint64_t kernels, syncs, streams_created, streams_live;
  uint64_t graphs_captured, graph_launches, graphs_live;
  uint64_t host_allocs_live;  // page-locked host blocks (host_alloc) not yet freed
  // Setup scopes (scope_create): made, not yet destroyed, setups handed one; and misuses: a
  // setup or call handed a scope that is not live, a state destroyed after its scope.
  uint64_t scopes_created, scopes_live, scoped_setups, scope_misuses;
  // States destroyed after the stream they last ran on (a cuDNN handle's stream must outlive it),
  // and before a graph that records a call using them (a graph launches the states' kernels).
  uint64_t states_after_their_stream, states_before_their_graphs;
  // Allocations, deallocations and default-stream work since the last work queued on any other
  // stream: on CUDA those are ordered on the legacy stream, which a call's next work waits for.
  uint64_t legacy_tail;
};
enum amber_sim_fault { AMBER_SIM_FAIL_ALLOCATION = 0, AMBER_SIM_FAIL_COPY = 1, AMBER_SIM_FAIL_KERNEL = 2 };
}

namespace amber::test::sim {

// Loads the simulated backend (through amber::backend) and returns its counters.
amber_sim_counters counters();
// Makes the k-th next operation of that kind fail (1: the next one); 0 cancels.
void fail(amber_sim_fault kind, uint64_t k);
// How many operations of that kind have been counted so far (to size fault loops).
uint64_t count(amber_sim_fault kind);

}  // namespace amber::test::sim
