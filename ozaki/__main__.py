"""The main job: ``python -m ozaki`` multiplies random matrices with each scheme.

Inputs follow the literature, ``a_ij = (U - 0.5) exp(phi Z)``; each scheme runs
on the fast CPU engine with its default (``"auto"``) number of moduli, in both
modes, next to native numpy. Errors are measured against the exactly rounded
product on a random sample of entries (error-free products summed by
``math.fsum``), so the table is exact where it says so.
"""

from __future__ import annotations

import argparse
import math
import platform
import sys
import time

import numpy as np

from . import __version__, dgemm
from .core.moduli import MODULI_VERSION


def _two_product(a, b):
    """``a * b == p + e`` exactly (Dekker's split; no FMA)."""
    p = a * b
    c = 134217729.0 * a
    ah = c - (c - a)
    al = a - ah
    c = 134217729.0 * b
    bh = c - (c - b)
    bl = b - bh
    return p, ((ah * bh - p) + ah * bl + al * bh) + al * bl


def exact_entries(A: np.ndarray, B: np.ndarray, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """Exactly rounded ``(A @ B)[rows[t], cols[t]]`` (valid while no term over/underflows)."""
    out = np.empty(len(rows))
    for t, (i, j) in enumerate(zip(rows, cols)):
        p, e = _two_product(A[i], B[:, j])
        out[t] = math.fsum(np.concatenate((p, e)))
    return out


def _best_time(f, repeat: int) -> tuple[float, object]:
    best, result = math.inf, None
    for _ in range(repeat):
        t0 = time.perf_counter()
        result = f()
        best = min(best, time.perf_counter() - t0)
    return best, result


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m ozaki", description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1024, help="matrix size n (n x n times n x n)")
    ap.add_argument("--phi", type=float, default=1.0, help="exponent spread phi of the inputs")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--sample", type=int, default=256,
                    help="number of entries checked against the exact product")
    ap.add_argument("--repeat", type=int, default=2,
                    help="timed runs per row, after one untimed warm-up call (best is shown)")
    return ap


def _problem(n: int, phi: float, seed: int, sample: int):
    """Operands ``A``, ``B`` and an error measure: ``errors(C)`` gives the largest relative
    error and the largest error over ``u |A||B|`` on ``sample`` entries, against their
    exactly rounded values."""
    rng = np.random.default_rng(seed)
    A = (rng.random((n, n)) - 0.5) * np.exp(phi * rng.standard_normal((n, n)))
    B = (rng.random((n, n)) - 0.5) * np.exp(phi * rng.standard_normal((n, n)))
    size = min(sample, n * n)
    rows, cols = np.divmod(rng.choice(n * n, size=size, replace=False), n)
    ref = exact_entries(A, B, rows, cols)
    absab = np.abs(A[rows]) @ np.abs(B)  # (size, n): row-wise |A||B|, then pick columns
    absab = absab[np.arange(size), cols]

    def errors(C):
        err = np.abs(C[rows, cols] - ref)
        nz = ref != 0
        return (float(np.max(err[nz] / np.abs(ref[nz]))) if nz.any() else 0.0,
                float(np.max(err / absab)) / 2.0 ** -53)
    return A, B, size, errors


def _warm(A, B, configs) -> None:
    """One untimed call per configuration, on the same operands (so every kernel the
    timed calls take is compiled, or loaded from numba's disk cache, beforehand)."""
    print("warming up: one untimed call per scheme and mode, compiling kernels on first "
          "use (cached afterwards)...\n ", end="", flush=True)
    t0 = time.perf_counter()
    for scheme, mode in configs:
        print(f" {scheme}/{mode}", end="", flush=True)
        dgemm(A, B, scheme=scheme, mode=mode)
    print(f": {time.perf_counter() - t0:.1f} s, not in the times below\n", flush=True)


def main(argv: list[str] | None = None) -> int:
    ap = _parser()
    args = ap.parse_args(argv)
    if args.n < 1 or args.sample < 1 or args.repeat < 1:
        ap.error("--n, --sample and --repeat must be positive")
    A, B, size, errors = _problem(args.n, args.phi, args.seed, args.sample)
    print(f"ozaki {__version__} (moduli tables v{MODULI_VERSION}) on {platform.machine()}, "
          f"Python {platform.python_version()}, numpy {np.__version__}")
    print(f"A, B: {args.n} x {args.n}, a_ij = (U - 0.5) exp({args.phi:g} Z), seed {args.seed}; "
          f"errors against exact values on {size} sampled entries")
    configs = [(scheme, mode) for scheme in ("fp64", "int8", "fp8")
               for mode in ("accurate", "fast")]
    _warm(A, B, configs)

    t_native, C_native = _best_time(lambda: A @ B, max(args.repeat, 3))
    rel_n, norm_n = errors(C_native)
    header = (f"{'scheme':<8}{'moduli':>7}  {'mode':<9}{'GEMMs':>6}  {'max rel err':>12}"
              f"  {'max err/(|A||B|)':>17}  {'time [s]':>9}  {'x numpy':>8}")
    print(header)
    print("-" * len(header))
    print(f"{'numpy':<8}{'-':>7}  {'native':<9}{1:>6}  {rel_n:>12.2e}  {norm_n:>15.2f} u"
          f"  {t_native:>9.3f}  {1.0:>8.2f}", flush=True)
    for scheme, mode in configs:
        t, (C, info) = _best_time(
            lambda: dgemm(A, B, scheme=scheme, mode=mode, return_info=True), args.repeat)
        rel, norm = errors(C)
        print(f"{scheme:<8}{info.num_moduli:>7}  {mode:<9}{info.gemms:>6}  {rel:>12.2e}"
              f"  {norm:>15.2f} u  {t:>9.3f}  {t / t_native:>8.2f}", flush=True)
    print("\nGEMMs: low-precision products on the engine (cpu-blas: one FP64 GEMM per "
          "modulus, +1 for the accurate-mode bound, +2 where that bound was refined).\n"
          "moduli: the count num_moduli='auto' certified for this call. u = 2**-53.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
