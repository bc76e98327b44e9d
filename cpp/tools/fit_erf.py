# Fits the rational erf that the wasm GELU uses (cpp/src/kernels/vexp.hpp, gelu):
#
#   erf(u) ≈ u · P(u²) / Q(u²),  P of degree 5, Q of degree 5 with Q(0) = 1,  u in [0, 4]
#
#   python3 cpp/tools/fit_erf.py        (with mpmath: Debian's python3-mpmath; a few seconds)
#
# erf is odd, so the fit on [0, 4] holds on [-4, 4]; beyond, float32's erf is ±1 (erf(4) = 1 − 1.5e-8), which the
# kernel returns. Linear least squares on u·P − erf·(Q − 1) = erf, weighted by 1/Q from the previous round (Loeb)
# and by Lawson's multiplicative weights, which move the least-squares fit towards the minimax one. Prints the largest
# error on a dense grid in exact arithmetic, then the coefficients as float32 literals, lowest degree first.
import struct
import sys

import mpmath as mp

mp.mp.dps = 30
P_DEGREE, Q_DEGREE, U = 5, 5, mp.mpf(4)
POINTS, ROUNDS = 300, 60


def value(c, u):
    s = u * u
    p = sum(c[k] * s**k for k in range(P_DEGREE + 1))
    q = 1 + sum(c[P_DEGREE + 1 + k] * s ** (k + 1) for k in range(Q_DEGREE))
    return u * p / q, q


# Chebyshev points, denser at both ends, and the clamp point itself.
us = [U * (1 - mp.cos(mp.pi * (i + mp.mpf(0.5)) / POINTS)) / 2 for i in range(POINTS)] + [U]
target = [mp.erf(u) for u in us]
weight = [mp.mpf(1)] * len(us)
q_before = [mp.mpf(1)] * len(us)
for _ in range(ROUNDS):
    rows, rhs = [], []
    for u, f, w, q in zip(us, target, weight, q_before):
        scale = mp.sqrt(w) / q
        s = u * u
        numerator = [scale * u * s**k for k in range(P_DEGREE + 1)]
        rows.append(numerator + [-scale * f * s ** (k + 1) for k in range(Q_DEGREE)])
        rhs.append(scale * f)
    a, b = mp.matrix(rows), mp.matrix(rhs)
    c = mp.lu_solve(a.T * a, a.T * b)
    errors = []
    q_before = []
    for u, f in zip(us, target):
        v, q = value(c, u)
        errors.append(abs(v - f))
        q_before.append(q)
    total = sum(w * e for w, e in zip(weight, errors))
    weight = [w * e / total * len(us) + mp.mpf(1e-30) for w, e in zip(weight, errors)]

worst = max(abs(value(c, U * i / 4000)[0] - mp.erf(U * i / 4000)) for i in range(4001))
print(f"largest error on [0, {U}] in exact arithmetic: {mp.nstr(worst, 3)}", file=sys.stderr)
as_float32 = [struct.unpack("f", struct.pack("f", float(c[k])))[0] for k in range(len(c))]
print("P:", ", ".join(f"{x:.9e}f" for x in as_float32[: P_DEGREE + 1]))
print("Q: 1.0f, " + ", ".join(f"{x:.9e}f" for x in as_float32[P_DEGREE + 1 :]))
