#!/usr/bin/python3
"""Fits the rational erf of kernels/cpu/vec_math.h (verf): erf(x) = x p(x^2) / q(x^2) with p of
degree 6 and q of degree 4 (q(0) = 1), on [0, 3.84] (beyond 3.8325 erf rounds to 1 in f32), by
iterated weighted linear least squares on the relative error (Sanathanan-Koerner: each step
solves p - erf q = 0 weighted by 1 / (erf q_previous)). Prints the coefficients and the maximum
relative error in double and in f32 Horner evaluation. Needs numpy (Debian's python3-numpy)."""
from math import erf

import numpy as np

N, P, Q, HI = 20000, 7, 4, 3.84
x = (np.cos(np.pi * (np.arange(N) + 0.5) / N) + 1) / 2 * HI + 1e-4  # Chebyshev nodes
f = np.array([erf(v) for v in x])
x2 = x * x
q_prev = np.ones_like(x)
for _ in range(12):
    A = np.hstack([np.stack([x * x2**i for i in range(P)], 1), -np.stack([f * x2**j for j in range(1, Q + 1)], 1)])
    w = 1.0 / (f * q_prev)
    sol = np.linalg.lstsq(A * w[:, None], f * w, rcond=None)[0]
    a, b = sol[:P], np.concatenate([[1.0], sol[P:]])
    q_prev = sum(b[j] * x2**j for j in range(Q + 1))
p = x * sum(a[i] * x2**i for i in range(P))
print("p (x^0 .. x^12 of x p(x^2)):", [float(v) for v in a])
print("q (x^0 .. x^8):", [float(v) for v in b])
print("max relative error, double:", float(np.max(np.abs(p / q_prev - f) / f)))
xf = np.linspace(1e-6, HI, 200001).astype(np.float32)
x2f = xf * xf
pf = np.float32(a[P - 1])
for i in range(P - 2, -1, -1):
    pf = pf * x2f + np.float32(a[i])
qf = np.float32(b[Q])
for j in range(Q - 1, -1, -1):
    qf = qf * x2f + np.float32(b[j])
rf = (xf * pf / qf).astype(np.float64)
ref = np.array([erf(float(v)) for v in xf])
print("max relative error, f32:", float(np.max(np.abs(rf - ref) / ref)))
