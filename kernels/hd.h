// AMBER_HD marks a function as host and device code when compiled by nvcc, plain host code
// otherwise: what the formulas shared by the CPU and CUDA kernels are declared with.
#pragma once

#if defined(__CUDACC__)
#define AMBER_HD __host__ __device__
#else
#define AMBER_HD
#endif
