"""The main job: ``python -m ozaki`` multiplies random matrices with each scheme.

Inputs follow the literature, ``a_ij = (U - 0.5) exp(phi Z)``; each scheme of
:data:`ozaki.SCHEMES` (``fp64`` first, then the others in their order) runs with
``engine="auto"`` (the fastest engine installed for it: ``cpu-onednn`` for the
integer and FP8 schemes where oneDNN is installed, else ``cpu-blas``) and its
default (``"auto"``) number of moduli, in both modes, next to native numpy. Each
row names its engine (``info.engine``) and the footnote what that engine's GEMMs
are. Errors are measured against the exactly rounded product on a random sample of
entries (error-free products summed by ``math.fsum``), so the table is exact where
it says so.
"""

from __future__ import annotations

import argparse
import math
import platform
import sys
import textwrap
import time

import numpy as np

from . import SCHEMES, __version__, dgemm, gemms_per_modulus, get_engine, resolve_options
from .core.moduli import MODULI_VERSION


#: The exact products each engine's GEMMs compute (for the footnote; an engine not
#: listed here is described as "its GEMMs").
_PRODUCTS = {"cpu-blas": "BLAS FP64 GEMMs", "cpu-onednn": "oneDNN INT8 GEMMs",
             "cpu-int8": "modelled INT8 GEMMs", "cpu-fp8": "modelled FP8 GEMMs"}


def _demo_schemes() -> tuple[str, ...]:
    """The schemes the table runs: ``fp64`` (the native format's) first, then every
    other scheme of :data:`ozaki.SCHEMES` in its order."""
    return ("fp64",) + tuple(s for s in SCHEMES if s != "fp64")


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
    configs = [(scheme, mode) for scheme in _demo_schemes() for mode in ("accurate", "fast")]
    _warm(A, B, configs)

    t_native, C_native = _best_time(lambda: A @ B, max(args.repeat, 3))
    rel_n, norm_n = errors(C_native)
    header = (f"{'scheme':<8}{'moduli':>7}  {'mode':<9}{'engine':<12}{'GEMMs':>6}"
              f"  {'max rel err':>12}  {'max err/(|A||B|)':>17}  {'time [s]':>9}  {'x numpy':>8}")
    print(header)
    print("-" * len(header))
    print(f"{'numpy':<8}{'-':>7}  {'native':<9}{'-':<12}{1:>6}  {rel_n:>12.2e}  {norm_n:>15.2f} u"
          f"  {t_native:>9.3f}  {1.0:>8.2f}", flush=True)
    infos = []
    for scheme, mode in configs:
        t, (C, info) = _best_time(
            lambda: dgemm(A, B, scheme=scheme, mode=mode, return_info=True), args.repeat)
        rel, norm = errors(C)
        infos.append(info)
        print(f"{scheme:<8}{info.num_moduli:>7}  {mode:<9}{info.engine:<12}{info.gemms:>6}"
              f"  {rel:>12.2e}  {norm:>15.2f} u  {t:>9.3f}  {t / t_native:>8.2f}", flush=True)
    print()
    for paragraph in _footnote(infos):
        print(textwrap.fill(paragraph, width=len(header), subsequent_indent="  ",
                            break_on_hyphens=False))
    return 0


def _footnote(infos) -> list[str]:
    """The table's footnote, true for the rows ``infos`` (their :class:`ozaki.OzakiInfo`):
    the engines that appeared, what their GEMMs are and how many a modulus takes
    (:func:`ozaki.gemms_per_modulus`), the compensated path where a row took it, and
    the scheme ``scheme="auto"`` takes here in each mode (:func:`ozaki.resolve_options`)."""
    engines = list(dict.fromkeys(info.engine for info in infos))

    def counts(name):  # "int8 1, fp8 3 (FP8 digits)": GEMMs a modulus of each scheme
        schemes = dict.fromkeys(info.scheme for info in infos if info.engine == name)
        return ", ".join(f"{scheme} {n}" + (" (FP8 digits)" if n == 3 else "")
                         for scheme, n in ((s, gemms_per_modulus(s, name)) for s in schemes))

    lines = [f"engine: the engine of the row's GEMMs (engine=\"auto\", info.engine): "
             f"{', '.join(engines)}.",
             "GEMMs: the engine's exact low-precision products, as info.gemms counts them. "
             "Per modulus: " + "; ".join(
                 f"{counts(name)} on {name} ({_PRODUCTS.get(name, 'its GEMMs')})"
                 for name in engines)
             + "; +1 in accurate mode for the bound, +1 to 3 exact FP64 GEMMs where that "
             "bound was refined."]
    if (any(info.scheme == "int8" and info.engine == "cpu-onednn" for info in infos)
            and get_engine("cpu-onednn").gemms_per_call == 2):
        lines.append("cpu-onednn runs here without VNNI: a GEMM of int8 residues (up to "
                     "128 in magnitude) takes the split encoding, one oneDNN call of twice "
                     "the rows (the work of 2 INT8 GEMMs), counted as one.")
    if any(info.path == "compensated" for info in infos):
        lines.append("Rows with 0 moduli and 0 GEMMs took the compensated path (products "
                     "of at most 2**24 terms: compensated dot products, entry by entry, "
                     "on no engine); their engine is the one the emulation would take.")
    lines.append("moduli: the count num_moduli='auto' certified for this call. u = 2**-53.")
    auto = [resolve_options("auto", "auto", mode, "auto") for mode in ("accurate", "fast")]
    lines.append("scheme=\"auto\" on this machine: " + ", ".join(
        f"{r.mode} mode {r.scheme} on {r.engine.name}" for r in auto) + ".")
    return lines


if __name__ == "__main__":
    sys.exit(main())
