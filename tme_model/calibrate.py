"""``tme-calibrate``: measure this machine into a profile, and check it against ``ozaki``.

Usage::

    tme-calibrate [-o profile.json] [--sizes 1536,3072] [--quick] [--repeats R]
    tme-calibrate --validate [--profile FILE | --sizes ...] [--validate-sizes 1024,2048,4096]
    python -m tme_model.calibrate ...         (the same)

What is measured (every figure the median of ``--repeats`` runs, the runs of all
configurations interleaved, so that a burst of load from other processes spreads over
them instead of hitting one):

* native FP64 GEMM (numpy ``@``) at each calibration size; the rate model
  ``r(s) = r_inf s / (s + n0)`` with s = (mnk)^(1/3) is fitted by least squares in the
  time, ``T = 2mnk (1 + n0 / s) / r_inf`` (BLAS is less efficient at small sizes);
* the exact-GEMM rate of each ``ozaki`` engine: ``cpu-blas`` (FP64 BLAS on
  integer-valued matrices) at the calibration sizes, fitted the same way to the median
  of every timing of one such GEMM: the standalone
  ``ozaki.engines.BlasEngine().matmul`` runs and the "products" phase of each
  ``ozaki.dgemm`` call below divided by its GEMM count; the simulations ``cpu-fp8``
  and ``cpu-int8`` at small sizes only (they are slow), with their GEMMs per modulus
  read from ``ozaki.dgemm``'s info;
* the FP32 path of ``cpu-blas`` (blocks whose exact bound is at most ``2**24`` run as
  SGEMM): ``BlasEngine().matmul`` on operands below ``sqrt(2**24 / n)``, fitted the
  same way; predictions then time each GEMM ``ozaki`` runs at its path's rate;
* memory bandwidth: a STREAM triad ``a = b + s c`` in numba (parallel), 24 bytes per
  element; the non-GEMM FP64 rate: a vectorised FMA loop in numba, in cache;
* the costs of ozaki's O(n^2) phases, by non-negative least squares (relative errors)
  on ``info.seconds`` of ``ozaki.dgemm`` calls at the calibration sizes, every scheme
  (int8, fp8, fp64 at their automatic moduli counts) and mode:

  - residues  = r N (mk + kn) + f_r
  - reconstruction = c N mn + f_c
  - scaling = (s + s_acc [accurate]) (mk + kn) + f_s, after subtracting the predicted
    bound GEMM from the accurate-mode scaling time
  - fixed = f_r + f_c + f_s + the median time of a call outside its phases.

:func:`validate` then times ``ozaki.dgemm`` at held-out sizes and compares it with
:meth:`tme_model.profile.Profile.predict_gemm`; :func:`calibrate_and_validate` (the
command's ``--validate`` without ``--profile``) does both in one interleaved schedule, so
that the calibration and the held-out runs see the same load of a shared machine.  The
moduli count of a prediction is the one ``ozaki`` chose (``info.num_moduli``: its
automatic count depends on the data); a native fallback of uncertified entries (none on
the standard-normal operands used here) is not modelled, and rows where it happened are
marked.  Nothing here is imported by ``tme_model`` itself; ozaki, numba and tqdm are
imported inside the functions.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import math
import os
import platform
import statistics
import sys
import time
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

from .profile import PROFILE_SCHEMA, PhaseCosts, Profile, dump_profile, gemm_paths, load_profile
from .specs import TMEError

__all__ = [
    "DEFAULT_SIZES",
    "OZAKI_MODES",
    "OZAKI_SCHEMES",
    "QUICK_SIZES",
    "VALIDATION_SIZES",
    "STATISTICS",
    "calibrate",
    "calibrate_and_validate",
    "fit_rate",
    "refit",
    "rst_table",
    "main",
    "markdown_table",
    "restate",
    "validate",
]

#: Calibration sizes (square n).
DEFAULT_SIZES: tuple[int, ...] = (1536, 3072)
#: Held-out sizes of the validation.
VALIDATION_SIZES: tuple[int, ...] = (1024, 2048, 4096)
#: ``--quick``: calibration and validation sizes, and the simulation engines' sizes.
QUICK_SIZES: tuple[int, ...] = (128, 256)
QUICK_VALIDATION_SIZES: tuple[int, ...] = (192, 384)
#: Sizes at which the slow simulation engines are timed.
SIM_SIZES: tuple[int, ...] = (256, 512)
QUICK_SIM_SIZES: tuple[int, ...] = (48, 96)
#: ozaki schemes and modes calibrated and validated.
OZAKI_SCHEMES: tuple[str, ...] = ("int8", "fp8", "fp64")
OZAKI_MODES: tuple[str, ...] = ("accurate", "fast")
#: Operand bound of the integer-valued test matrices per engine (residues or digits).
_ENGINE_AMAX = {"cpu-blas": 127, "cpu-fp8": 16, "cpu-int8": 127}
#: Schemes a simulation engine is recorded under.
_SIM_SCHEMES = {"cpu-fp8": ("fp8",), "cpu-int8": ("int8", "fp8")}


# ------------------------------------------------------------------ fitting

@dataclass(frozen=True)
class RateFit:
    """A fitted GEMM rate model ``r(s) = tflops * s / (s + n0)``, s = (mnk)^(1/3)."""

    tflops: float
    n0: float

    def rate(self, m: int, n: int, k: int) -> float:
        """Rate at the size of an (m, k) x (k, n) product, TFLOP/s."""
        s = (float(m) * n * k) ** (1.0 / 3.0)
        return self.tflops * s / (s + self.n0)


def _nnls(rows: list[list[float]], target: list[float]) -> np.ndarray:
    """Non-negative least squares with each equation scaled by its target (relative)."""
    from scipy.optimize import nnls

    A = np.asarray(rows, dtype=float)
    b = np.asarray(target, dtype=float)
    w = 1.0 / np.maximum(np.abs(b), 1e-12)
    x, _ = nnls(A * w[:, None], b * w)
    return x


def fit_rate(shapes: Sequence[tuple[int, int, int]], seconds: Sequence[float]) -> RateFit:
    """Fit ``T = 2mnk (1 + n0 / s) / r_inf`` to GEMM timings (relative least squares).

    Parameters
    ----------
    shapes : sequence of (m, n, k)
        GEMM shapes.
    seconds : sequence of float
        Their (median) times.

    Returns
    -------
    RateFit
        ``tflops`` = r_inf in TFLOP/s and ``n0`` >= 0.  With one size, or when the data
        do not show a rate rising with size, ``n0`` = 0 and the rate is the mean.
    """
    flops = [2.0 * m * n * k for m, n, k in shapes]
    size = [(float(m) * n * k) ** (1.0 / 3.0) for m, n, k in shapes]
    if len(set(size)) >= 2:
        a, b = _nnls([[f, f / s] for f, s in zip(flops, size)], list(seconds))
        if a > 0:
            return RateFit(float(1.0 / a / 1e12), float(b / a))
    (a,) = _nnls([[f] for f in flops], list(seconds))
    return RateFit(float(1.0 / a / 1e12), 0.0)


# ------------------------------------------------------------- measurements

#: Statistics a measurement can be summarised by: the median (default) or the minimum
#: (the run least disturbed by other processes).
STATISTICS: tuple[str, ...] = ("median", "min")
_STAT = "median"


def _median(xs: Sequence[float]) -> float:
    """The configured statistic (:data:`STATISTICS`, median by default) of the runs."""
    return float(statistics.median(xs) if _STAT == "median" else min(xs))


class _statistic:
    """Context manager that sets the statistic of :func:`_median`."""

    def __init__(self, name: str):
        if name not in STATISTICS:
            raise ValueError(f"statistic must be one of {', '.join(STATISTICS)}, got {name!r}")
        self.name = name

    def __enter__(self):
        global _STAT
        self.old, _STAT = _STAT, self.name

    def __exit__(self, *exc):
        global _STAT
        _STAT = self.old


class _Runner:
    """Runs named tasks in ``repeats`` rounds, each task once per round in a shuffled
    (seeded) order, with one tqdm bar; keeps every result.

    Interleaving spreads slow drifts of the machine's load over all tasks alike instead
    of letting them hit one configuration."""

    def __init__(self, repeats: int, progress: bool, desc: str, seed: int = 0):
        self.repeats = max(1, int(repeats))
        self.progress = progress
        self.desc = desc
        self.seed = seed
        self.tasks: list[tuple[str, Callable[[], Any]]] = []
        self.results: dict[str, list[Any]] = {}

    def add(self, key: str, fn: Callable[[], Any]) -> None:
        self.tasks.append((key, fn))

    def run(self) -> dict[str, list[Any]]:
        from tqdm import tqdm

        bar = tqdm(total=len(self.tasks) * self.repeats, desc=self.desc, unit="run",
                   disable=not self.progress, file=sys.stderr, leave=True)
        order = np.random.default_rng(self.seed)
        try:
            for rep in range(self.repeats):
                for i in order.permutation(len(self.tasks)):
                    key, fn = self.tasks[i]
                    bar.set_postfix_str(f"{key} ({rep + 1}/{self.repeats})", refresh=False)
                    self.results.setdefault(key, []).append(fn())
                    bar.update()
        finally:
            bar.close()
        return self.results


def _timed(fn: Callable[[], Any]) -> Callable[[], float]:
    def run() -> float:
        t0 = time.perf_counter()
        fn()
        return time.perf_counter() - t0
    return run


def _int_matrix(rng: np.random.Generator, shape: tuple[int, int], amax: int) -> np.ndarray:
    return rng.integers(-amax, amax + 1, size=shape).astype(np.float64)


def _stream_kernels():
    import numba

    @numba.njit(parallel=True)
    def triad(a, b, c, s):  # pragma: no cover - compiled
        for i in numba.prange(a.size):
            a[i] = b[i] + s * c[i]

    @numba.njit(parallel=True, fastmath=True)
    def fma(y, reps, a, b):  # pragma: no cover - compiled
        for c in numba.prange(y.shape[0]):
            v = y[c]
            for _ in range(reps):
                for j in range(v.size):
                    v[j] = v[j] * a + b

    return triad, fma


def _ozaki_call(A, B, scheme, mode, engine="cpu-blas"):
    import ozaki

    def run():
        t0 = time.perf_counter()
        _, info = ozaki.dgemm(A, B, scheme=scheme, mode=mode, engine=engine, return_info=True)
        wall = time.perf_counter() - t0
        return {"wall": wall, "num_moduli": info.num_moduli, "gemms": info.gemms,
                "refined_block": list(info.refined_block),
                "fallback_entries": int(getattr(info, "fallback_entries", 0) or 0),
                **{f"t_{k}": float(v) for k, v in info.seconds.items()}}
    return run


def _median_record(recs: list[dict]) -> dict:
    out = dict(recs[0])
    for key in recs[0]:
        if key == "wall" or key.startswith("t_"):
            out[key] = _median([r[key] for r in recs])
    out["runs"] = len(recs)
    return out


def _host() -> dict:
    host: dict[str, Any] = {"node": platform.node(), "machine": platform.machine(),
                            "processor": platform.processor() or platform.machine(),
                            "cpus": os.cpu_count(), "python": platform.python_version(),
                            "numpy": np.__version__}
    try:
        from threadpoolctl import threadpool_info

        host["blas"] = [{k: d.get(k) for k in ("internal_api", "version", "num_threads", "architecture")}
                        for d in threadpool_info() if d.get("user_api") == "blas"]
    except Exception:  # pragma: no cover - optional
        pass
    try:
        import ozaki

        host["ozaki"] = ozaki.__version__
    except Exception:  # pragma: no cover - ozaki is a sibling package
        pass
    return host


def _loadavg() -> list[float] | None:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:  # pragma: no cover - not on every platform
        return None


_WARM = False


def _warm_up() -> None:
    """Compile ozaki's numba kernels and touch BLAS before anything is timed (once)."""
    global _WARM
    if _WARM:
        return
    import ozaki

    _WARM = True
    rng = np.random.default_rng(1)
    A, B = rng.standard_normal((64, 48)), rng.standard_normal((48, 40))
    for scheme in OZAKI_SCHEMES:
        for mode in OZAKI_MODES:
            ozaki.dgemm(A, B, scheme=scheme, mode=mode)
    A @ B


def calibrate(sizes: Sequence[int] = DEFAULT_SIZES, *, repeats: int = 3,
              sim_sizes: Sequence[int] = SIM_SIZES, stream_elements: int = 1 << 25,
              progress: bool = True, seed: int = 0, statistic: str = "median") -> Profile:
    """Measure this machine and return its profile (device ``local``).

    Parameters
    ----------
    sizes : sequence of int
        Square calibration sizes n for native GEMM, the ``cpu-blas`` engine and the
        ``ozaki.dgemm`` phase timings.
    repeats : int
        Runs per measurement (rounds, interleaved); medians are kept.
    sim_sizes : sequence of int
        Sizes at which the simulation engines ``cpu-fp8`` and ``cpu-int8`` are timed.
    stream_elements : int
        Elements of each STREAM-triad array.
    progress : bool
        Show a tqdm progress bar on stderr.
    seed : int
        Seed of the random test matrices and of the run order.
    statistic : {"median", "min"}
        How the runs of one measurement are summarised.

    Returns
    -------
    Profile
        With the summarised timings, every run, and the fits under
        ``meta["calibration"]``.
    """
    with _statistic(statistic):
        run = _Runner(repeats, progress, "tme-calibrate", seed)
        finish = _calibration_tasks(run, sizes, sim_sizes, stream_elements, seed)
        return finish(run.run())


def calibrate_and_validate(sizes: Sequence[int] = DEFAULT_SIZES,
                           validation_sizes: Sequence[int] = VALIDATION_SIZES, *,
                           repeats: int = 3, sim_sizes: Sequence[int] = SIM_SIZES,
                           stream_elements: int = 1 << 25, progress: bool = True,
                           seed: int = 0, statistic: str = "median") -> tuple[Profile, list[dict]]:
    """Calibrate and validate in one interleaved schedule.

    The calibration runs (at ``sizes``) and the validation runs (at
    ``validation_sizes``) are done in the same rounds, in a shuffled order, so that both
    see the same load of a shared machine; the profile is fitted from the calibration
    runs only and then predicts the validation runs (held-out sizes).

    Parameters
    ----------
    sizes, validation_sizes : sequence of int
        Calibration and held-out sizes.
    repeats, sim_sizes, stream_elements, progress, seed, statistic
        As in :func:`calibrate`.

    Returns
    -------
    tuple of (Profile, list of dict)
        The profile and the rows of :func:`validate`.
    """
    with _statistic(statistic):
        run = _Runner(repeats, progress, "tme-calibrate --validate", seed)
        finish_cal = _calibration_tasks(run, sizes, sim_sizes, stream_elements, seed)
        finish_val = _validation_tasks(run, validation_sizes, OZAKI_SCHEMES, OZAKI_MODES, seed + 1)
        res = run.run()
        profile = finish_cal(res)
        profile.meta["calibration"]["interleaved_with_validation"] = sorted({int(n) for n in validation_sizes})
        return profile, finish_val(res, profile)


def refit(profile: Profile, statistic: str = "median") -> Profile:
    """Fit a profile again from the runs it keeps, with another statistic.

    Parameters
    ----------
    profile : Profile
        A profile written by :func:`calibrate` (it keeps every run).
    statistic : {"median", "min"}
        How the runs of one measurement are summarised.

    Returns
    -------
    Profile
        The refitted profile (same runs, same metadata otherwise).
    """
    c = profile.meta.get("calibration", {})
    if "runs" not in c:
        raise TMEError(f"profile {profile.path or profile.name} keeps no runs to refit")
    engines = [e for e in c["engine_seconds"] if not e.startswith("cpu-blas (")]
    with _statistic(statistic):
        new = _fit_calibration(c["runs"], c["sizes"], engines, c["sim_sizes"],
                               {s: dict(d) for s, d in profile.gemms_per_modulus.items()},
                               c["stream_elements"], c["fma_flops"] / 2, c["repeats"],
                               c.get("loadavg_before"), None)
    new.meta["calibration"]["refit_from"] = profile.path or "profile"
    for key in ("created", "host", "description"):
        if key in profile.meta:
            new.meta[key] = profile.meta[key]
    return new


def _calibration_tasks(run: "_Runner", sizes, sim_sizes, stream_elements: int, seed: int):
    """Add the calibration runs to ``run``; return the function that fits the results."""
    import ozaki
    from ozaki.engines import ENGINES

    sizes = sorted({int(n) for n in sizes})
    if not sizes or sizes[0] < 8:
        raise ValueError(f"calibration sizes must be integers >= 8, got {sizes}")
    load_before = _loadavg()
    started = time.perf_counter()
    _warm_up()
    triad, fma = _stream_kernels()
    rng = np.random.default_rng(seed)
    engines = [e for e in ozaki.available_engines() if e in ENGINES]

    # GEMMs per modulus of each engine and scheme, from ozaki's own count (fast mode).
    gpm: dict[str, dict[str, int]] = {}
    T = rng.standard_normal((16, 16))
    for engine in engines:
        for scheme in ENGINES[engine].schemes:
            _, info = ozaki.dgemm(T, T, scheme=scheme, mode="fast", engine=engine, num_moduli=2,
                                  return_info=True)
            gpm.setdefault(scheme, {})[engine] = max(1, round(info.gemms / info.num_moduli))

    keep: list[Any] = []  # operands stay alive until the runs are done

    # memory bandwidth and the non-GEMM FP64 rate
    a = np.zeros(stream_elements)
    b = np.ones(stream_elements)
    c = np.full(stream_elements, 2.0)
    triad(a, b, c, 3.0)
    run.add("stream", _timed(lambda: triad(a, b, c, 3.0)))
    y = np.ones((64 * max(1, os.cpu_count() or 1), 64))
    fma_reps = 20000 if stream_elements >= 1 << 22 else 2000
    fma(y, 2, 0.999, 1e-3)
    run.add("fma", _timed(lambda: fma(y, fma_reps, 0.999, 1e-3)))

    # native GEMM and the cpu-blas engine (both paths) at the calibration sizes
    blas = ENGINES["cpu-blas"]()
    for n in sizes:
        A, B = rng.standard_normal((n, n)), rng.standard_normal((n, n))
        out = np.empty((n, n))
        X, Y = _int_matrix(rng, (n, n), 127), _int_matrix(rng, (n, n), 127)
        h = max(1, math.isqrt(blas.fp32_bound // n))  # k h**2 <= 2**24: the FP32 path
        X32, Y32 = _int_matrix(rng, (n, n), h), _int_matrix(rng, (n, n), h)
        keep += [A, B, out, X, Y, X32, Y32]
        run.add(f"native:{n}", _timed(lambda A=A, B=B, out=out: np.matmul(A, B, out=out)))
        run.add(f"engine:cpu-blas:{n}",
                _timed(lambda X=X, Y=Y, out=out: blas.matmul(X, Y, 127, 127, out=out)))
        run.add(f"fp32:cpu-blas:{n}",
                _timed(lambda X=X32, Y=Y32, h=h, out=out: blas.matmul(X, Y, h, h, out=out)))
    # simulation engines at small sizes
    for engine in engines:
        if engine == "cpu-blas":
            continue
        eng, amax = ENGINES[engine](), _ENGINE_AMAX.get(engine, 16)
        for n in sorted(set(sim_sizes)):
            X, Y = _int_matrix(rng, (n, n), amax), _int_matrix(rng, (n, n), amax)
            keep += [X, Y]
            eng.matmul(X, Y, amax, amax)  # first touch
            run.add(f"engine:{engine}:{n}",
                    _timed(lambda eng=eng, X=X, Y=Y, amax=amax: eng.matmul(X, Y, amax, amax)))
    # ozaki phase timings at the calibration sizes
    for n in sizes:
        A, B = rng.standard_normal((n, n)), rng.standard_normal((n, n))
        keep += [A, B]
        for scheme in OZAKI_SCHEMES:
            for mode in OZAKI_MODES:
                run.add(f"ozaki:{scheme}:{mode}:{n}", _ozaki_call(A, B, scheme, mode))
    return lambda res: _fit_calibration(res, sizes, engines, sim_sizes, gpm, stream_elements,
                                        y.size * fma_reps, run.repeats, load_before, started)


def _fit_calibration(res, sizes, engines, sim_sizes, gpm, stream_elements, fma_flops_half,
                     repeats, load_before, started) -> Profile:
    from ozaki.engines import ENGINES

    mem_tbps = 24.0 * stream_elements / _median(res["stream"]) / 1e12
    vec_tflops = 2.0 * fma_flops_half / _median(res["fma"]) / 1e12
    shapes = [(n, n, n) for n in sizes]
    native = fit_rate(shapes, [_median(res[f"native:{n}"]) for n in sizes])
    lowp: dict[str, dict[str, float]] = {}
    lowp_n0: dict[str, dict[str, float]] = {}
    raw_engines: dict[str, dict[str, float]] = {}

    def blas_gemm_samples(n: int) -> list[float]:
        # every timing of one FP64-path cpu-blas GEMM at size n: the standalone runs, and
        # the products phase of each ozaki call whose products all take that path,
        # divided by its GEMM count (the same BLAS call on integer-valued operands)
        xs = list(res[f"engine:cpu-blas:{n}"])
        for scheme in OZAKI_SCHEMES:
            g = gpm.get(scheme, {}).get("cpu-blas", 1)
            for mode in OZAKI_MODES:
                for r in res[f"ozaki:{scheme}:{mode}:{n}"]:
                    if not any(f for _, f in gemm_paths(scheme, r["num_moduli"], "fast", n, "cpu-blas")):
                        xs.append(r["t_products"] / (g * r["num_moduli"]))
        return xs

    for engine in engines:
        ns = sizes if engine == "cpu-blas" else sorted(set(sim_sizes))
        raw_engines[engine] = {str(n): _median(res[f"engine:{engine}:{n}"]) for n in ns}
        if engine == "cpu-blas":
            secs = [_median(blas_gemm_samples(n)) for n in ns]
            raw_engines["cpu-blas (pooled with ozaki products)"] = {str(n): t for n, t in zip(ns, secs)}
        else:
            secs = [raw_engines[engine][str(n)] for n in ns]
        fit = fit_rate([(n, n, n) for n in ns], secs)
        for scheme in (ENGINES[engine].schemes if engine == "cpu-blas" else _SIM_SCHEMES.get(engine, ())):
            if scheme in ENGINES[engine].schemes:
                lowp.setdefault(scheme, {})[engine] = fit.tflops
                lowp_n0.setdefault(scheme, {})[engine] = fit.n0
    gpm = {s: {e: g for e, g in d.items() if e in lowp.get(s, {})} for s, d in gpm.items()}
    fp32, fp32_n0 = {}, {}
    if all(f"fp32:cpu-blas:{n}" in res for n in sizes):  # (profiles before the FP32 path)
        secs = [_median(res[f"fp32:cpu-blas:{n}"]) for n in sizes]
        raw_engines["cpu-blas (FP32 path)"] = {str(n): t for n, t in zip(sizes, secs)}
        fit = fit_rate(shapes, secs)
        fp32, fp32_n0 = {"cpu-blas": fit.tflops}, {"cpu-blas": fit.n0}
    paths = dict(fp64_n0=native.n0, lowp_n0=lowp_n0, gemms_per_modulus=gpm,
                 fp32_tflops=fp32, fp32_n0=fp32_n0)

    base = Profile("local", native.tflops, vec_tflops, mem_tbps, lowp, {}, {}, "", **paths)
    phases: dict[str, PhaseCosts] = {}
    ozaki_raw: dict[str, dict] = {}
    fit_report: dict[str, dict] = {}
    for scheme in OZAKI_SCHEMES:
        recs = {(mode, n): _median_record(res[f"ozaki:{scheme}:{mode}:{n}"])
                for mode in OZAKI_MODES for n in sizes}
        ozaki_raw[scheme] = {f"{mode}:{n}": r for (mode, n), r in recs.items()}
        phases[scheme], fit_report[scheme] = _fit_phases(base, scheme, recs)

    calibration = {
        "tool": "tme-calibrate",
        "sizes": sizes, "repeats": repeats, "statistic": _STAT,
        "sim_sizes": sorted(set(sim_sizes)), "stream_elements": stream_elements,
        "stream_bytes_per_element": 24,
        "seconds": None if started is None else round(time.perf_counter() - started, 1),
        "fma_flops": 2.0 * fma_flops_half,
        "loadavg_before": load_before, "loadavg_after": _loadavg(),
        "native_seconds": {str(n): _median(res[f"native:{n}"]) for n in sizes},
        "engine_seconds": raw_engines,
        "ozaki": ozaki_raw,
        "phase_fit": fit_report,
        "rate_model": "rate(s) = tflops * s / (s + n0), s = (m n k)^(1/3)",
        "runs": {k: v for k, v in res.items() if not k.startswith("v:")},
    }
    meta = {"description": f"this machine ({platform.node() or 'local'}), calibrated by tme-calibrate",
            "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
            "host": _host(), "calibration": calibration}
    return Profile("local", native.tflops, vec_tflops, mem_tbps, lowp, phases, meta, "", **paths)


def _fit_phases(base: Profile, scheme: str, recs: dict[tuple[str, int], dict]) -> tuple[PhaseCosts, dict]:
    """Least-squares phase costs of one scheme from its median phase timings."""
    res_rows, res_t, rec_rows, rec_t, sc_rows, sc_t, outside = [], [], [], [], [], [], []
    for (mode, n), r in recs.items():
        N, n_in, n_out = r["num_moduli"], 2 * n * n, n * n
        res_rows.append([N * n_in, 1.0])
        res_t.append(r["t_residues"])
        rec_rows.append([N * n_out, 1.0])
        rec_t.append(r["t_reconstruction"])
        scale = r["t_scaling"]
        if mode == "accurate":  # ozaki books the bound GEMM under scaling
            scale -= _bound_gemm_s(base, scheme, N, n, r.get("refined_block", (0, 0)))
            sc_rows.append([n_in, n_in, 1.0])
        else:
            sc_rows.append([n_in, 0.0, 1.0])
        sc_t.append(max(scale, 1e-7))
        outside.append(max(0.0, r["wall"] - sum(r[f"t_{p}"] for p in ("scaling", "residues", "products", "reconstruction"))))
    r_el, f_r = _nnls(res_rows, res_t)
    c_el, f_c = _nnls(rec_rows, rec_t)
    s_el, s_acc, f_s = _nnls(sc_rows, sc_t)
    costs = PhaseCosts(scale_s_per_element=float(s_el), accurate_scale_s_per_element=float(s_acc),
                       residue_s_per_element_modulus=float(r_el),
                       recon_s_per_output_modulus=float(c_el),
                       fixed_s=float(f_r + f_c + f_s + _median(outside)))
    # products phase against the engine rate: how well the GEMM term is predicted
    prod = {f"{mode}:{n}": float(r["t_products"]) / base.predict_gemm(
        scheme, r["num_moduli"], "fast", n, n, n, engine="cpu-blas").gemm_s
        for (mode, n), r in recs.items()}
    report = {"intercepts_s": {"residues": float(f_r), "reconstruction": float(f_c), "scaling": float(f_s),
                               "outside_phases": _median(outside)},
              "products_measured_over_engine_model": prod}
    return costs, report


def _bound_gemm_s(profile: Profile, scheme: str, moduli: int, n: int, refined=(0, 0)) -> float:
    """Predicted time of the accurate-mode bound GEMMs at size n (cpu-blas): the coarse
    one and the refinement of ``refined`` (rows, columns); ozaki books them as scaling."""
    acc = profile.predict_gemm(scheme, moduli, "accurate", n, n, n, engine="cpu-blas",
                               refined_block=tuple(refined))
    return acc.gemm_s - profile.predict_gemm(scheme, moduli, "fast", n, n, n, engine="cpu-blas").gemm_s


# --------------------------------------------------------------- validation

def validate(profile: Profile, sizes: Sequence[int] = VALIDATION_SIZES, *, repeats: int = 3,
             schemes: Sequence[str] = OZAKI_SCHEMES, modes: Sequence[str] = OZAKI_MODES,
             progress: bool = True, seed: int = 1, statistic: str = "median") -> list[dict]:
    """Time ``ozaki.dgemm`` (engine ``cpu-blas``, automatic moduli) and numpy at held-out
    sizes and compare with the profile's predictions.

    Parameters
    ----------
    profile : Profile
        A calibration profile with ``cpu-blas`` rates and phase costs.
    sizes : sequence of int
        Square sizes n.
    repeats : int
        Runs per configuration (interleaved); the median is reported.
    schemes, modes : sequence of str
        ozaki configurations.
    progress : bool
        tqdm progress bar on stderr.
    seed : int
        Seed of the random (standard normal) operands and of the run order.
    statistic : {"median", "min"}
        How the runs of one configuration are summarised.

    Returns
    -------
    list of dict
        One row per (n, scheme, mode), plus ``scheme="native"`` (numpy) per n, with keys
        ``n, scheme, mode, num_moduli, gemms, predicted_s, measured_s, ratio`` (predicted
        over measured) and the predicted and measured phases.
    """
    with _statistic(statistic):
        run = _Runner(repeats, progress, "tme-calibrate --validate", seed)
        finish = _validation_tasks(run, sizes, schemes, modes, seed)
        return finish(run.run(), profile)


def restate(rows: list[dict], profile: Profile, statistic: str = "median") -> list[dict]:
    """Rows of :func:`validate` summarised again from their runs (``measured_runs``) with
    another statistic, and predicted by another profile (e.g. :func:`refit`).

    Parameters
    ----------
    rows : list of dict
        Rows of :func:`validate` (as ``--json`` writes them).
    profile : Profile
        Profile that predicts them.
    statistic : {"median", "min"}
        Summary of the runs.

    Returns
    -------
    list of dict
        New rows (the measured phases are dropped: only the totals have their runs).
    """
    out = []
    with _statistic(statistic):
        for r in rows:
            n = r["n"]
            if r["scheme"] == "native":
                pred = profile.native_gemm_s(n, n, n)
            else:
                pred = profile.predict_gemm(r["scheme"], r["num_moduli"], r["mode"], n, n, n,
                                            engine="cpu-blas",
                                            refined_block=tuple(r.get("refined_block", (0, 0)))).total_s
            meas = _median(r["measured_runs"])
            new = {k: v for k, v in r.items() if k not in ("predicted_phases", "measured_phases")}
            new.update(predicted_s=pred, measured_s=meas, ratio=pred / meas, statistic=statistic)
            out.append(new)
    return out


def _validation_tasks(run: "_Runner", sizes, schemes, modes, seed: int):
    """Add the validation runs to ``run``; return the function that builds the rows."""
    _warm_up()
    rng = np.random.default_rng(seed)
    keep = []
    for n in sorted({int(x) for x in sizes}):
        A, B = rng.standard_normal((n, n)), rng.standard_normal((n, n))
        out = np.empty((n, n))
        keep += [A, B, out]
        run.add(f"v:native::{n}", _timed(lambda A=A, B=B, out=out: np.matmul(A, B, out=out)))
        for scheme in schemes:
            for mode in modes:
                run.add(f"v:{scheme}:{mode}:{n}", _ozaki_call(A, B, scheme, mode))
    return lambda res, profile: _validation_rows(res, profile)


def _validation_rows(res: dict, profile: Profile) -> list[dict]:
    rows = []
    for key, recs in res.items():
        if not key.startswith("v:"):
            continue
        _, scheme, mode, n = key.split(":")
        n = int(n)
        if scheme == "native":
            meas = _median(recs)
            pred = profile.native_gemm_s(n, n, n)
            rows.append({"n": n, "scheme": "native", "mode": "", "num_moduli": None, "gemms": 1,
                         "predicted_s": pred, "measured_s": meas, "ratio": pred / meas,
                         "runs": len(recs), "measured_runs": list(recs)})
            continue
        r = _median_record(recs)
        refined = tuple(r.get("refined_block", (0, 0)))
        t = profile.predict_gemm(scheme, r["num_moduli"], mode, n, n, n, engine="cpu-blas",
                                 refined_block=refined)
        bound = _bound_gemm_s(profile, scheme, r["num_moduli"], n, refined) if mode == "accurate" else 0.0
        rows.append({
            "n": n, "scheme": scheme, "mode": mode, "num_moduli": r["num_moduli"],
            "gemms": r["gemms"], "predicted_s": t.total_s, "measured_s": r["wall"],
            "ratio": t.total_s / r["wall"], "runs": r["runs"], "refined_block": list(refined),
            "fallback_entries": max(x.get("fallback_entries", 0) for x in recs),
            "measured_runs": [x["wall"] for x in recs], "statistic": _STAT,
            "predicted_phases": {"scaling": t.scale_s + bound, "residues": t.residue_s,
                                 "products": t.gemm_s - bound, "reconstruction": t.recon_s,
                                 "fixed": t.fixed_s},
            "measured_phases": {p: r[f"t_{p}"] for p in ("scaling", "residues", "products", "reconstruction")},
        })
    rows.sort(key=lambda r: (r["n"], r["scheme"] != "native", r["scheme"], r["mode"]))
    return rows


def markdown_table(rows: list[dict]) -> str:
    """Render :func:`validate` rows as a Markdown table, with a summary line."""
    head = ["n", "scheme", "mode", "N", "GEMMs", "predicted [s]", "measured [s]", "pred/meas"]
    out = ["| " + " | ".join(head) + " |", "|" + "|".join(["---:"] * 2 + ["---"] * 2 + ["---:"] * 4) + "|"]
    for r in rows:
        fb = " (fallback)" if r.get("fallback_entries") else ""
        cells = [str(r["n"]), r["scheme"] + fb, r["mode"] or "-",
                 "-" if r["num_moduli"] is None else str(r["num_moduli"]), str(r["gemms"]),
                 f"{r['predicted_s']:.3g}", f"{r['measured_s']:.3g}", f"{r['ratio']:.2f}"]
        out.append("| " + " | ".join(cells) + " |")
    emu = [r for r in rows if r["scheme"] != "native"]
    if emu:
        worst = max(emu, key=lambda r: abs(math.log(r["ratio"])))
        within = all(0.75 <= r["ratio"] <= 1.25 for r in emu)
        out.append("")
        out.append(f"ozaki.dgemm: pred/meas from {min(r['ratio'] for r in emu):.2f} to "
                   f"{max(r['ratio'] for r in emu):.2f} (worst: n={worst['n']} {worst['scheme']} "
                   f"{worst['mode']}); within +-25%: {'yes' if within else 'no'}")
    return "\n".join(out)


def rst_table(rows: list[dict], profile: Profile | None = None) -> str:
    """Render :func:`validate` rows as a reStructuredText table (the docs' table).

    Parameters
    ----------
    rows : list of dict
        Rows of :func:`validate`, summarised by their median.
    profile : Profile, optional
        The profile that predicted them; when it keeps its runs, the rows are also
        restated from their minima with the profile refitted from minima
        (:func:`refit`, :func:`restate`), as three more columns.

    Returns
    -------
    str
        The table (simple-table syntax).
    """
    head = ["n", "scheme", "mode", "N", "GEMMs", "pred [s]", f"{rows[0].get('statistic', 'median')} [s]",
            "pred/meas"]
    alt = None
    if profile is not None and "runs" in profile.meta.get("calibration", {}):
        alt = restate(rows, refit(profile, "min"), "min")
        head += ["pred [s]", "min [s]", "pred/meas"]
    body = []
    for i, r in enumerate(rows):
        cells = [str(r["n"]), r["scheme"] + (" (fallback)" if r.get("fallback_entries") else ""),
                 r["mode"] or "-", "-" if r["num_moduli"] is None else str(r["num_moduli"]),
                 str(r["gemms"])]
        for x in [r] + ([alt[i]] if alt else []):
            cells += [f"{x['predicted_s']:.3g}", f"{x['measured_s']:.3g}", f"{x['ratio']:.2f}"]
        body.append(cells)
    from ._docs import _rst_table

    return _rst_table(head, body)


# ---------------------------------------------------------------------- CLI

def _sizes(text: str) -> list[int]:
    try:
        vals = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"sizes must be comma-separated integers, got {text!r}")
    if not vals or min(vals) < 8:
        raise argparse.ArgumentTypeError(f"sizes must be integers >= 8, got {text!r}")
    return vals


def main(argv: Sequence[str] | None = None) -> int:
    """``tme-calibrate``: measure this machine into a profile; ``--validate`` checks it.

    Parameters
    ----------
    argv : sequence of str, optional
        Arguments (default ``sys.argv[1:]``).

    Returns
    -------
    int
        Exit status (0; usage errors exit with 2).
    """
    p = argparse.ArgumentParser(
        prog="tme-calibrate",
        description="Measure this machine (native FP64 GEMM, ozaki engines, STREAM bandwidth, "
                    "ozaki's O(n^2) phases) into a TME profile, shown as device 'local' by "
                    "tme-plot/tme-table --profile FILE.  --validate compares the profile's "
                    "predictions with ozaki.dgemm at held-out sizes (Markdown table).")
    p.add_argument("-o", "--output", metavar="FILE",
                   help="profile to write (default profile.json; with --validate and "
                        "--profile, none)")
    p.add_argument("--sizes", type=_sizes, metavar="N,N",
                   help=f"calibration sizes (default {','.join(map(str, DEFAULT_SIZES))}; "
                        f"--quick: {','.join(map(str, QUICK_SIZES))})")
    p.add_argument("--quick", action="store_true",
                   help="tiny sizes, one run each, small STREAM arrays: a smoke test, not a "
                        "calibration")
    p.add_argument("--repeats", type=int, metavar="R",
                   help="runs per measurement, summarised by --statistic (default 3; --quick 1)")
    p.add_argument("--statistic", choices=STATISTICS, default="median",
                   help="summary of the repeated runs of each measurement (default median; "
                        "min: the run least disturbed by other processes)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    v = p.add_argument_group("validation")
    v.add_argument("--validate", action="store_true",
                   help="after calibrating (or loading --profile), time ozaki.dgemm at the "
                        "validation sizes and print predicted / measured as Markdown")
    v.add_argument("--profile", metavar="FILE", help="with --validate: use this profile "
                                                      "instead of calibrating")
    v.add_argument("--validate-sizes", type=_sizes, metavar="N,N,N",
                   help=f"default {','.join(map(str, VALIDATION_SIZES))} "
                        f"(--quick: {','.join(map(str, QUICK_VALIDATION_SIZES))})")
    v.add_argument("--json", metavar="FILE", help="also write the validation rows as JSON")
    v.add_argument("--rst", metavar="FILE", help="also write them as a reStructuredText table "
                                                 "(with the minima restated, after a calibration)")
    a = p.parse_args(argv)
    if a.repeats is not None and a.repeats < 1:
        p.error(f"--repeats must be >= 1, got {a.repeats}")
    if a.profile and not a.validate:
        p.error("--profile is for --validate (calibration writes a profile with -o)")
    if a.profile and a.sizes:
        p.error("--sizes calibrates; with --profile nothing is calibrated")
    repeats = a.repeats or (1 if a.quick else 3)
    progress = not a.no_progress
    vsizes = a.validate_sizes or (QUICK_VALIDATION_SIZES if a.quick else VALIDATION_SIZES)
    how = ""
    if a.profile:
        try:
            profile = load_profile(a.profile)
        except TMEError as exc:
            p.error(str(exc))
        rows = validate(profile, vsizes, repeats=repeats, progress=progress, statistic=a.statistic)
        how = "validation timed after the calibration"
    else:
        sizes = a.sizes or (QUICK_SIZES if a.quick else DEFAULT_SIZES)
        opts = dict(repeats=repeats, progress=progress, statistic=a.statistic,
                    sim_sizes=QUICK_SIM_SIZES if a.quick else SIM_SIZES,
                    stream_elements=(1 << 20) if a.quick else (1 << 25))
        if a.validate:
            profile, rows = calibrate_and_validate(sizes, vsizes, **opts)
            how = "calibration and validation runs interleaved"
        else:
            profile = calibrate(sizes, **opts)
        out = a.output or "profile.json"
        dump_profile(profile, out)
        profile = load_profile(out)
        _summary(profile, out)
    if a.validate:
        cal = profile.meta.get("calibration", {})
        print(f"\nPredicted versus measured (profile {profile.path}: calibrated at n = "
              f"{', '.join(map(str, cal.get('sizes', []))) or '?'}; {how}; {a.statistic} of {repeats} "
              f"runs; load average before {cal.get('loadavg_before')}, now {_loadavg()})\n")
        print(markdown_table(rows))
        if a.json:
            with open(a.json, "w") as fh:
                json.dump(rows, fh, indent=2)
                fh.write("\n")
        if a.rst:
            with open(a.rst, "w") as fh:
                fh.write(rst_table(rows, profile) + "\n")
    return 0


def _summary(profile: Profile, path: str) -> None:
    cal = profile.meta.get("calibration", {})
    print(f"tme-calibrate: wrote {os.path.abspath(path)} (schema {PROFILE_SCHEMA}, device "
          f"'{profile.name}', {cal.get('seconds', '?')} s)")
    print(f"  native FP64 GEMM  {profile.fp64_tflops * 1e3:.1f} GFLOP/s asymptotic, n0 = "
          f"{profile.fp64_n0:.0f}")
    print(f"  FP64 non-GEMM     {profile.fp64_vector_tflops * 1e3:.1f} GFLOP/s (numba FMA loop)")
    print(f"  STREAM triad      {profile.mem_tbps * 1e3:.1f} GB/s")
    for scheme, engines in profile.lowp_tflops.items():
        for engine, rate in engines.items():
            print(f"  {scheme:4s} {engine:9s}    {rate * 1e3:.3g} GFLOP/s per GEMM, "
                  f"{profile.gemms_per(scheme, engine)} GEMM(s) per modulus")
    for engine, rate in profile.fp32_tflops.items():
        print(f"  {engine} FP32 path {rate * 1e3:.3g} GFLOP/s asymptotic, n0 = "
              f"{profile.fp32_n0.get(engine, 0.0):.0f} (blocks whose exact bound FP32 holds)")
    for scheme, c in profile.phases.items():
        print(f"  {scheme:4s} phases      scale {c.scale_s_per_element * 1e9:.2f} "
              f"(+{c.accurate_scale_s_per_element * 1e9:.2f} accurate) ns/elt, residues "
              f"{c.residue_s_per_element_modulus * 1e9:.2f} ns/elt/modulus, recon "
              f"{c.recon_s_per_output_modulus * 1e9:.2f} ns/out/modulus, fixed {c.fixed_s * 1e3:.2f} ms")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
