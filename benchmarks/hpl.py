"""HPL-style benchmark of ``ozaki.linalg``: LU solves on emulated FP64 products beside scipy.

``python -m benchmarks.hpl --n 4096 --nb 256 [--seeds 0 1 2] [--json out.json]``

For each order ``n`` and seed it builds HPL's problem (``numpy.random.default_rng(seed)``:
``A = U(n, n) - 0.5``, then ``b = U(n) - 0.5``, ``U`` uniform on [0, 1): entries in
[-0.5, 0.5) as HPL's generator) and solves ``A x = b`` three ways in one run, each
timed once (``--repeat R``: R times, the three in rotation, the fastest reported), in
this order:

* ``ozaki-full``: :func:`ozaki.linalg.lu_factor` then :func:`ozaki.linalg.lu_solve`
  with block size ``--nb``, ``num_moduli="auto"`` (the full, FP64-grade count);
* ``ozaki-refine``: ``ozaki.linalg.solve_refined(A, b, return_info=True)`` (factor with
  fewer moduli, refine in FP64) where this version of ozaki has it, else a note;
* ``scipy``: :func:`scipy.linalg.lu_factor` then :func:`scipy.linalg.lu_solve` (LAPACK).

Each prints HPL's lines: ``T/V N NB P Q Time Gflops`` (one process: ``P = Q = 1``;
GFLOP/s by HPL's count ``2/3 n^3 + 3/2 n^2``), then HPL's scaled residual
``||Ax-b||_oo / (eps (||A||_oo ||x||_oo + ||b||_oo) n)``, ``eps = 2^-53``, computed in
FP64 by numpy (``A @ x - b``), ``PASSED`` below 16 else ``FAILED``; then a line with the
share of the time in emulated products (``LinalgInfo.emulated_seconds`` over the wall
time), the refined solve's facts (steps, counts of moduli, backward error) and the ratio
to scipy's time on the same matrix (and the refined solve's to the full-count one's).
The time includes the argument checks (``check_finite``) of both libraries. Kernels are
compiled on a small problem first (untimed). HPL prints ``Time`` with 2 decimals; here
it has 4, and the residual 9 significant digits.

``--engine``, ``--scheme``, ``--mode`` pass through to ozaki's products (both ozaki
rows); ``--quick`` runs n = 256, 512 with nb = 64 (a smoke test). The CPU's model and
its instruction set (``lscpu`` flags: AVX2, AVX-512, VNNI, AMX) are printed and stored
in the JSON (``--json``), with every run's figures and a summary (medians over seeds).
Progress goes to stderr (tqdm).
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import math
import os
import platform
import statistics
import sys
import time
from typing import Any, Sequence

import numpy as np

from benchmarks import bench_common as bc

#: HPL's machine epsilon (relative precision of FP64 with rounding to nearest).
EPS = 2.0 ** -53
#: HPL's threshold on the scaled residual.
THRESHOLD = 16.0
METHODS = ("ozaki-full", "ozaki-refine", "scipy")
RESIDUAL_LABEL = "||Ax-b||_oo/(eps*(||A||_oo*||x||_oo+||b||_oo)*N)="
RULE, THIN = "=" * 80, "-" * 80
HEADER = ("T/V                N    NB     P     Q               Time                 Gflops")
QUICK_SIZES, QUICK_NB = (256, 512), 64
#: Environment variables that set the thread counts of the BLAS and of ozaki's passes.
THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS",
                    "NUMBA_NUM_THREADS")
#: The refined solve's info fields its note line shows (those it has).
REFINE_FACTS = ("iterations", "gmres_iterations", "factor_num_moduli", "full_num_moduli",
                "backward_error", "componentwise_backward_error", "converged", "fell_back")


def hpl_flops(n: int) -> float:
    """HPL's operation count for order ``n``: ``2/3 n^3 + 3/2 n^2``."""
    return 2.0 * n ** 3 / 3.0 + 1.5 * n ** 2


def hpl_problem(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """HPL's random problem: ``A`` (n, n) and ``b`` (n,), entries uniform in [-0.5, 0.5)."""
    rng = np.random.default_rng(seed)
    A = rng.random((n, n))
    A -= 0.5
    b = rng.random(n) - 0.5
    return A, b


def scaled_residual(A: np.ndarray, x: np.ndarray, b: np.ndarray) -> dict:
    """HPL's check: ``||Ax-b||_oo / (eps (||A||_oo ||x||_oo + ||b||_oo) n)`` and the norms."""
    r = A @ x - b
    norms = {"norm_r": float(np.abs(r).max()), "norm_a": float(np.abs(A).sum(axis=1).max()),
             "norm_x": float(np.abs(x).max()), "norm_b": float(np.abs(b).max())}
    denom = EPS * (norms["norm_a"] * norms["norm_x"] + norms["norm_b"]) * A.shape[0]
    res = norms["norm_r"] / denom if denom > 0 else math.nan  # x = b = 0: no verdict
    return {"residual": res, "passed": bool(res < THRESHOLD), **norms}


def _plain(value: Any) -> Any:
    """A JSON-friendly copy of an info field (``None`` for what JSON cannot hold)."""
    if isinstance(value, (bool, int, float, str)) or value is None:
        return value
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return None


def info_fields(info: Any) -> dict:
    """An info object's fields and scalar properties, JSON-ready."""
    d = dataclasses.asdict(info) if dataclasses.is_dataclass(info) else dict(vars(info))
    for name in ("emulated_share", "update_share"):
        if hasattr(type(info), name):
            d[name] = getattr(info, name)
    return {k: _plain(v) for k, v in d.items() if not k.startswith("_")}


def _ozaki_full(A, b, nb, opts):
    from ozaki import linalg
    t0 = time.perf_counter()
    lu, piv, finfo = linalg.lu_factor(A, block_size=nb, return_info=True, **opts)
    t1 = time.perf_counter()
    x, sinfo = linalg.lu_solve((lu, piv), b, block_size=nb, return_info=True, **opts)
    t = time.perf_counter() - t0
    emulated = finfo.emulated_seconds + sinfo.emulated_seconds
    return x, t, {"factor_s": t1 - t0, "solve_s": t - (t1 - t0),
                  "emulated_share": emulated / t, "factor_emulated_share": finfo.emulated_share,
                  "factor_info": info_fields(finfo), "solve_info": info_fields(sinfo)}


def _ozaki_refine(A, b, nb, opts):
    from ozaki import linalg
    t0 = time.perf_counter()
    x, info = linalg.solve_refined(A, b, block_size=nb, return_info=True, **opts)
    t = time.perf_counter() - t0
    extra = {"info": info_fields(info)}
    # the factorisations' emulated products (the residuals' are not counted apart)
    factors = [getattr(info, k, None) for k in ("factor_info", "fallback_info")]
    emulated = [f.emulated_seconds for f in factors if hasattr(f, "emulated_seconds")]
    if emulated:
        extra["factorisation_emulated_share"] = sum(emulated) / t
    return x, t, extra


def _scipy(A, b, nb, opts):
    import scipy.linalg
    t0 = time.perf_counter()
    x = scipy.linalg.lu_solve(scipy.linalg.lu_factor(A), b)
    return x, time.perf_counter() - t0, {}


SOLVERS = {"ozaki-full": _ozaki_full, "ozaki-refine": _ozaki_refine, "scipy": _scipy}


def refined_available() -> bool:
    from ozaki import linalg
    return hasattr(linalg, "solve_refined")


def warm_up(nb: int, opts: dict, methods: Sequence[str]) -> None:
    """Compile (or load) every kernel the timed calls run, on an untimed small problem."""
    A, b = hpl_problem(2 * nb + 3, 12345)
    for m in methods:
        SOLVERS[m](A, b, nb, opts)


def hpl_lines(run: dict) -> list[str]:
    """HPL's three lines for one run (``T/V ...``, rule, residual), without the header."""
    return [f"{run['method']:<12s}{run['n']:>8d}{run['nb']:>6d}{1:>6d}{1:>6d}"
            f"{run['seconds']:>19.4f}{run['gflops']:>23.4e}", THIN,
            f"{RESIDUAL_LABEL} {run['residual']:16.9g} ...... "
            f"{'PASSED' if run['passed'] else 'FAILED'}"]


def note_line(run: dict) -> str:
    """What the run spent in emulated products, its ratio to scipy, and its own facts."""
    ratio = f"{run['ratio_to_scipy']:.3g}x scipy's time" if "ratio_to_scipy" in run else ""
    if run["method"] == "scipy":
        return "scipy.linalg.lu_factor + lu_solve (LAPACK dgetrf/dgetrs)"
    if run["method"] == "ozaki-full":
        fi, si = run["factor_info"], run["solve_info"]
        return (f"factor {run['factor_s']:.4g} s + solve {run['solve_s']:.4g} s; "
                f"{100 * run['emulated_share']:.1f}% of the time in emulated products "
                f"(lu_factor's: {100 * run['factor_emulated_share']:.1f}% of its time; "
                f"{fi['emulated_products'] + si['emulated_products']} of "
                f"{fi['products'] + si['products']} products emulated); {ratio}")
    info = run.get("info", {})
    facts = [f"{k} {info[k]:.3g}" if isinstance(info[k], float) else f"{k} {info[k]}"
             for k in REFINE_FACTS if k in info]
    share = (f">= {100 * run['factorisation_emulated_share']:.1f}% of the time in emulated "
             "products (the factorisations'; the residuals' are not counted apart); "
             if "factorisation_emulated_share" in run else "")
    full = (f"; {run['ratio_to_full']:.3g}x the full-count solve's time"
            if "ratio_to_full" in run else "")
    return f"{', '.join(facts) or 'solve_refined'}; {share}{ratio}{full}"


def run(sizes: Sequence[int], nb: int, seeds: Sequence[int], opts: dict,
        progress: bool = True, repeat: int = 1) -> dict:
    """Measure every (n, seed) with every method, printing HPL's lines to stdout.

    Each method is timed ``repeat`` times on the same problem, the methods in rotation;
    a run's figures are its fastest call's (``samples_s``: every call's seconds).
    """
    from tqdm import tqdm

    import ozaki

    methods = [m for m in METHODS if m != "ozaki-refine" or refined_available()]
    skipped = [] if "ozaki-refine" in methods else [
        "ozaki-refine: skipped, ozaki.linalg.solve_refined is not available in this version"]
    bar = tqdm(total=len(sizes) * len(seeds) * len(methods) * repeat, desc="hpl", unit="solve",
               file=sys.stderr, disable=not progress, dynamic_ncols=True)
    bar.set_postfix_str("warm-up")
    warm_up(nb, opts, methods)
    load_before, runs = os.getloadavg(), []
    for n in sizes:
        for seed in seeds:
            A, b = hpl_problem(n, seed)
            best: dict = {}
            for rep in range(repeat):  # in rotation: a change of load hits every method
                for method in methods:
                    bar.set_postfix_str(f"n={n} seed={seed} {method} ({rep + 1}/{repeat})")
                    x, t, extra = SOLVERS[method](A, b, nb, opts)
                    samples = best.get(method, {}).get("samples_s", []) + [t]
                    if method not in best or t < best[method]["seconds"]:
                        best[method] = {"method": method, "n": n, "nb": nb, "seed": seed,
                                        "seconds": t, "gflops": hpl_flops(n) / t / 1e9,
                                        **scaled_residual(A, x, b), **extra}
                    best[method]["samples_s"] = samples
                    bar.update()
            group = [best[m] for m in methods]
            by = {r["method"]: r for r in group}
            for r in group:
                if r["method"] != "scipy":
                    r["ratio_to_scipy"] = r["seconds"] / by["scipy"]["seconds"]
            if "ozaki-refine" in by:
                by["ozaki-refine"]["ratio_to_full"] = (by["ozaki-refine"]["seconds"]
                                                      / by["ozaki-full"]["seconds"])
            for r in group:
                lines = [HEADER, THIN, *hpl_lines(r), f"  {r['method']}: {note_line(r)}", RULE]
                bar.write("\n".join(lines), file=sys.stdout)
            runs += group
            del A, b
    bar.close()
    return {"benchmark": "hpl", "created": datetime.datetime.now().isoformat(timespec="seconds"),
            "machine": {**bc.isa(), "python": platform.python_version(), "numpy": np.__version__,
                        "blas": bc.blas_info(), "pass_threads": ozaki.get_workers(),
                        "env": {k: os.environ.get(k) for k in THREAD_VARIABLES},
                        "loadavg_before": load_before,
                        "loadavg_after": os.getloadavg()},
            "ozaki": {"version": ozaki.__version__, "options": opts,
                      "resolved": str(ozaki.resolve_options(**opts))},
            "parameters": {"sizes": list(sizes), "nb": nb, "seeds": list(seeds),
                           "repeat": repeat, "eps": EPS,
                           "threshold": THRESHOLD, "P": 1, "Q": 1},
            "skipped": skipped, "runs": runs, "summary": summarize(runs)}


def summarize(runs: list[dict]) -> list[dict]:
    """Medians over seeds per (n, method): time, GFLOP/s, residual, ratio to scipy."""
    out = []
    for n in dict.fromkeys(r["n"] for r in runs):
        for method in METHODS:
            rs = [r for r in runs if r["n"] == n and r["method"] == method]
            if not rs:
                continue
            row = {"n": n, "method": method, "runs": len(rs),
                   "median_s": statistics.median(r["seconds"] for r in rs),
                   "median_gflops": statistics.median(r["gflops"] for r in rs),
                   "median_residual": statistics.median(r["residual"] for r in rs),
                   "max_residual": max(r["residual"] for r in rs),
                   "passed": sum(r["passed"] for r in rs)}
            for key in ("ratio_to_scipy", "ratio_to_full", "emulated_share",
                        "factor_emulated_share", "factorisation_emulated_share"):
                if all(key in r for r in rs):
                    row[f"median_{key}"] = statistics.median(r[key] for r in rs)
            out.append(row)
    return out


def emulated_cell(row: dict) -> str:
    """A summary row's share of time in emulated products (``>=``: factorisations only)."""
    if "median_emulated_share" in row:
        return f"{100 * row['median_emulated_share']:.1f}%"
    if "median_factorisation_emulated_share" in row:
        return f">={100 * row['median_factorisation_emulated_share']:.1f}%"
    return ""


def summary_lines(result: dict) -> list[str]:
    """The closing summary: machine, then one line per (n, method)."""
    m = result["machine"]
    out = ["", f"CPU: {m['cpu']}, {m['cores']} cores; instruction set: {m['summary']}; "
           f"load average before/after {m['loadavg_before'][0]:.2f}/{m['loadavg_after'][0]:.2f}",
           *result["skipped"],
           f"{'n':>6s}  {'method':<12s} {'runs':>4s} {'time [s]':>10s} {'GFLOP/s':>9s} "
           f"{'residual':>9s} {'passed':>6s} {'x scipy':>8s} {'emulated':>8s}"]
    for r in result["summary"]:
        ratio = r.get("median_ratio_to_scipy")
        share = emulated_cell(r)
        out.append(f"{r['n']:>6d}  {r['method']:<12s} {r['runs']:>4d} {r['median_s']:>10.4g} "
                   f"{r['median_gflops']:>9.3g} {r['median_residual']:>9.3g} "
                   f"{r['passed']:>3d}/{r['runs']:<2d} "
                   f"{'' if ratio is None else f'{ratio:.3g}':>8s} "
                   f"{share:>8s}")
    return out


def _ints(values: Sequence[str], name: str, low: int) -> list[int]:
    try:
        out = [int(v) for text in values for v in text.split(",") if v.strip()]
    except ValueError:
        raise ValueError(f"{name} must be integers, got {' '.join(values)!r}") from None
    if not out or min(out) < low:
        raise ValueError(f"{name} must be integers >= {low}, got {' '.join(values)!r}")
    return out


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark (see the module docstring); returns the exit status."""
    ap = argparse.ArgumentParser(prog="python -m benchmarks.hpl",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", nargs="+", metavar="N",
                    help="orders (several, or comma-separated; default 4096, --quick 256 512)")
    ap.add_argument("--nb", type=int, help="block size (default 256, --quick 64)")
    ap.add_argument("--seeds", nargs="+", default=["0"], metavar="SEED",
                    help="seeds of the random problems (default 0)")
    ap.add_argument("--engine", help="ozaki engine (default auto)")
    ap.add_argument("--scheme", help="ozaki scheme (default auto)")
    ap.add_argument("--mode", help="ozaki mode (default: ozaki.linalg's, accurate)")
    ap.add_argument("--repeat", type=int, default=1,
                    help="timed calls per method and problem, in rotation; the fastest is "
                         "reported (default 1, as HPL; more on a shared machine)")
    ap.add_argument("--quick", action="store_true", help="small orders: a smoke test")
    ap.add_argument("--json", metavar="PATH", help="write every run and the summary here")
    ap.add_argument("--no-progress", action="store_true", help="no progress bar")
    a = ap.parse_args(argv)
    try:
        sizes = _ints(a.n, "--n", 1) if a.n else list(QUICK_SIZES if a.quick else (4096,))
        seeds = _ints(a.seeds, "--seeds", 0)
    except ValueError as exc:
        ap.error(str(exc))
    nb = a.nb if a.nb is not None else (QUICK_NB if a.quick else 256)
    if nb < 1:
        ap.error(f"--nb must be a positive integer, got {nb}")
    if a.repeat < 1:
        ap.error(f"--repeat must be a positive integer, got {a.repeat}")
    opts = {k: v for k, v in (("engine", a.engine), ("scheme", a.scheme), ("mode", a.mode))
            if v is not None}
    import ozaki
    try:
        ozaki.resolve_options(**opts)
    except (ValueError, TypeError) as exc:
        ap.error(f"ozaki options: {exc}")
    m = bc.isa()
    print(f"HPL-style benchmark of ozaki.linalg: n = {', '.join(map(str, sizes))}, nb = {nb}, "
          f"seeds {', '.join(map(str, seeds))}, P = Q = 1; eps = 2^-53, threshold {THRESHOLD:g}"
          + (f"; fastest of {a.repeat} calls" if a.repeat > 1 else ""))
    print(f"CPU: {m['cpu']}, {m['cores']} cores; instruction set: {m['summary']}; ozaki "
          f"options {opts or 'defaults'} ({ozaki.resolve_options(**opts)})")
    print(RULE)
    result = run(sizes, nb, seeds, opts, progress=not a.no_progress, repeat=a.repeat)
    print("\n".join(summary_lines(result)))
    if a.json:
        with open(a.json, "w") as fh:
            json.dump(result, fh, indent=1)
            fh.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
