// AMBER_HOT marks the functions every model call runs (the loader's call path and the tensors it
// makes), so that GCC and Clang group them in .text.hot instead of wherever the library's growth
// puts them. Measured on bench/'s ten_mul: scattered, they conflicted in the 8-way L1
// instruction cache (63 misses a call under callgrind's cache simulation, 6% slower); grouped,
// 7 misses and 099e033's speed (bench/README.md, "[op-table] check").
#pragma once

#define AMBER_HOT __attribute__((hot))
