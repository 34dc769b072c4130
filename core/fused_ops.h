/* The pointwise instruction list, the one source of the fused opcodes (backend.h), FusedOp,
 * program names and arity, the fusion pass's one-to-one ops, both devices' fused, unary and
 * binary kernels and eager functions. X(OPCODE, name, arity, kind): formula amber::pw::op::name
 * (kernels/pointwise_math.h); kind: none, or the op of that name: numeric, floating,
 * floating_cheap, floating_attrs (Scalar attributes are operands), binary (two tensors).
 * AMBER_FUSED_OPS_CORE (arithmetic, clamps, the common activations) run inline in the CPU
 * fused interpreter's switch; AMBER_FUSED_OPS_MORE out of line through a table, so the
 * interpreter does not grow as the list does: append new ops to MORE. */
#ifndef AMBER_CORE_FUSED_OPS_H
#define AMBER_CORE_FUSED_OPS_H

#define AMBER_FUSED_OPS_CORE(X)                \
  X(ADD, add, 2, none)                         \
  X(SUB, sub, 2, none)                         \
  X(MUL, mul, 2, none)                         \
  X(DIV, div, 2, none)                         \
  X(POW, pow, 2, none)                         \
  X(NEG, neg, 1, numeric)                      \
  X(ABS, abs, 1, numeric)                      \
  X(EXP, exp, 1, floating)                     \
  X(LOG, log, 1, floating)                     \
  X(SQRT, sqrt, 1, floating)                   \
  X(RSQRT, rsqrt, 1, floating)                 \
  X(TANH, tanh, 1, floating)                   \
  X(SIGMOID, sigmoid, 1, floating)             \
  X(RELU, relu, 1, numeric)                    \
  X(GELU, gelu, 1, none)                       \
  X(GELU_TANH, gelu_tanh, 1, none)             \
  X(SILU, silu, 1, floating)                   \
  X(RECIPROCAL, reciprocal, 1, floating_cheap) \
  X(CLAMP_MIN, clamp_min, 2, none)             \
  X(CLAMP_MAX, clamp_max, 2, none)             \
  X(CLAMP, clamp, 3, none)

#define AMBER_FUSED_OPS_MORE(X)                  \
  X(ERF, erf, 1, floating)                       \
  X(LOG1P, log1p, 1, floating)                   \
  X(EXPM1, expm1, 1, floating)                   \
  X(SIN, sin, 1, floating)                       \
  X(COS, cos, 1, floating)                       \
  X(FLOOR, floor, 1, numeric)                    \
  X(CEIL, ceil, 1, numeric)                      \
  X(ROUND, round, 1, numeric)                    \
  X(SIGN, sign, 1, numeric)                      \
  X(RELU6, relu6, 1, floating_cheap)             \
  X(HARDSIGMOID, hardsigmoid, 1, floating_cheap) \
  X(HARDSWISH, hardswish, 1, floating_cheap)     \
  X(MISH, mish, 1, floating)                     \
  X(SELU, selu, 1, floating)                     \
  X(LEAKY_RELU, leaky_relu, 2, floating_attrs)   \
  X(ELU, elu, 2, floating_attrs)                 \
  X(SOFTPLUS, softplus, 3, floating_attrs)       \
  X(HARDSHRINK, hardshrink, 2, floating_attrs)   \
  X(SOFTSHRINK, softshrink, 2, floating_attrs)   \
  X(THRESHOLD, threshold, 3, floating_attrs)     \
  X(MAXIMUM, maximum, 2, binary)                 \
  X(MINIMUM, minimum, 2, binary)                 \
  X(TAN, tan, 1, floating)                       \
  X(ASIN, asin, 1, floating)                     \
  X(ACOS, acos, 1, floating)                     \
  X(ATAN, atan, 1, floating)                     \
  X(SINH, sinh, 1, floating)                     \
  X(COSH, cosh, 1, floating)                     \
  X(ASINH, asinh, 1, floating)                   \
  X(ACOSH, acosh, 1, floating)                   \
  X(ATANH, atanh, 1, floating)                   \
  X(SOFTSIGN, softsign, 1, floating)

#define AMBER_FUSED_OPS(X) AMBER_FUSED_OPS_CORE(X) AMBER_FUSED_OPS_MORE(X)

#endif /* AMBER_CORE_FUSED_OPS_H */
