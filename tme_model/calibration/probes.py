"""What a calibration times: native GEMM, the ``ozaki`` engines, STREAM, an FMA loop and
``ozaki.dgemm`` itself, each added as tasks to a :class:`~.runner.Runner`.

ozaki, numba and threadpoolctl are imported inside the functions (:doc:`architecture`,
"Packages and imports").
"""

from __future__ import annotations

import math
import os
import platform
import time
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Callable, Sequence

import numpy as np

from .runner import Runner, summarise, timed

__all__ = [
    "DEFAULT_SIZES",
    "FIT_PHASES",
    "QUICK_SIM_SIZES",
    "QUICK_SIZES",
    "QUICK_VALIDATION_SIZES",
    "SIM_SIZES",
    "VALIDATION_SIZES",
    "Plan",
    "calibration_tasks",
    "loadavg",
    "ozaki_names",
    "summarise_record",
    "validation_tasks",
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
#: The phases of ``ozaki.dgemm`` (``info.seconds``) the phase fit reads; they must be
#: ``ozaki.PHASES`` (checked by :func:`ozaki_names`).
FIT_PHASES: tuple[str, ...] = ("scaling", "residues", "products", "reconstruction")
#: Operand bound of the integer-valued test matrices per engine (residues or digits).
_ENGINE_AMAX = {"cpu-blas": 127, "cpu-fp8": 16, "cpu-int8": 127, "cpu-onednn": 127}


def ozaki_names() -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
    """Return ``ozaki.SCHEMES``, ``ozaki.MODES`` and ``ozaki.PHASES``: what is calibrated.

    Raises
    ------
    RuntimeError
        If ozaki no longer times the phases :data:`FIT_PHASES` the fit needs.
    """
    import ozaki

    if set(ozaki.PHASES) != set(FIT_PHASES):
        raise RuntimeError(f"ozaki times the phases {ozaki.PHASES}; the calibration fits "
                           f"{FIT_PHASES}: update tme_model.calibration")
    return tuple(ozaki.SCHEMES), tuple(ozaki.MODES), tuple(ozaki.PHASES)


@dataclass(frozen=True)
class Plan:
    """What a calibration measured, for fitting its runs (again: :func:`~.fitting.refit`).

    Attributes
    ----------
    sizes, sim_sizes : tuple of int
        Calibration sizes, and those of the simulation engines.
    engines : tuple of str
        The ``ozaki`` engines timed.
    gemms_per_modulus : dict
        Scheme -> engine -> exact GEMMs per modulus.
    stream_elements : int
        Elements of each STREAM array.
    fma_flops : float
        Flops of one run of the FMA loop.
    repeats : int
        Rounds.
    loadavg_before : list of float or None
        Load average when the calibration started.
    started : float or None
        ``time.perf_counter()`` at the start (``None``: a refit, no duration).
    """

    sizes: tuple[int, ...]
    sim_sizes: tuple[int, ...]
    engines: tuple[str, ...]
    gemms_per_modulus: dict
    stream_elements: int
    fma_flops: float
    repeats: int
    loadavg_before: list | None
    started: float | None


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


def _emulated(A, B, scheme: str) -> dict:
    """The emulation's options at this shape (the model is of the emulation: a small
    product would take ozaki's small-product path with ``num_moduli="auto"``)."""
    import ozaki
    return ozaki.emulated_options(scheme, A.shape[0], A.shape[1], B.shape[1])


def _ozaki_call(A, B, scheme: str, mode: str, engine: str = "cpu-blas") -> Callable[[], dict]:
    import ozaki
    kw = _emulated(A, B, scheme)

    def run() -> dict:
        t0 = time.perf_counter()
        _, info = ozaki.dgemm(A, B, scheme=scheme, mode=mode, engine=engine, return_info=True,
                              **kw)
        wall = time.perf_counter() - t0
        return {"wall": wall, "num_moduli": info.num_moduli, "gemms": info.gemms,
                "refined_block": list(info.refined_block),
                "fallback_entries": int(getattr(info, "fallback_entries", 0) or 0),
                **{f"t_{k}": float(v) for k, v in info.seconds.items()}}
    return run


def summarise_record(recs: list[dict], statistic: str) -> dict:
    """One record of runs of ``ozaki.dgemm``: wall and phase times summarised, the rest
    from the first run, and ``runs``."""
    out = dict(recs[0])
    for key in recs[0]:
        if key == "wall" or key.startswith("t_"):
            out[key] = summarise([r[key] for r in recs], statistic)
    out["runs"] = len(recs)
    return out


def host() -> dict:
    """What the machine is: node, CPU, Python, numpy, BLAS, ozaki version."""
    info: dict[str, Any] = {"node": platform.node(), "machine": platform.machine(),
                            "processor": platform.processor() or platform.machine(),
                            "cpus": os.cpu_count(), "python": platform.python_version(),
                            "numpy": np.__version__}
    try:
        from threadpoolctl import threadpool_info

        info["blas"] = [{k: d.get(k) for k in ("internal_api", "version", "num_threads", "architecture")}
                        for d in threadpool_info() if d.get("user_api") == "blas"]
    except Exception:  # pragma: no cover - optional
        pass
    try:
        import ozaki

        info["ozaki"] = ozaki.__version__
    except Exception:  # pragma: no cover - ozaki is a sibling package
        pass
    return info


def loadavg() -> list[float] | None:
    """The load average (1, 5, 15 minutes), rounded, or ``None`` where there is none."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:  # pragma: no cover - not on every platform
        return None


@lru_cache(maxsize=1)
def _warm_up() -> None:
    """Compile ozaki's numba kernels and touch BLAS before anything is timed (once)."""
    import ozaki

    schemes, modes, _ = ozaki_names()
    rng = np.random.default_rng(1)
    A, B = rng.standard_normal((64, 48)), rng.standard_normal((48, 40))
    for scheme in schemes:
        for mode in modes:
            ozaki.dgemm(A, B, scheme=scheme, mode=mode, **_emulated(A, B, scheme))
    A @ B


def calibration_tasks(run: Runner, sizes: Sequence[int], sim_sizes: Sequence[int],
                      stream_elements: int, seed: int) -> Plan:
    """Add the calibration runs to ``run``; return the plan that fits their results.

    Parameters
    ----------
    run : Runner
        The schedule.
    sizes, sim_sizes : sequence of int
        Calibration sizes, and the sizes of the simulation engines.
    stream_elements : int
        Elements of each STREAM-triad array.
    seed : int
        Seed of the test matrices.

    Returns
    -------
    Plan
        For :func:`~.fitting.fit_calibration`.
    """
    import ozaki

    from ..schemes import gemms_per_modulus

    sizes = sorted({int(n) for n in sizes})
    if not sizes or sizes[0] < 8:
        raise ValueError(f"calibration sizes must be integers >= 8, got {sizes}")
    load_before = loadavg()
    started = time.perf_counter()
    _warm_up()
    schemes, modes, _ = ozaki_names()
    triad, fma = _stream_kernels()
    rng = np.random.default_rng(seed)
    engines = ozaki.available_engines()
    gpm = {s: {e: gemms_per_modulus(s, e) for e in engines if s in ozaki.get_engine(e).schemes}
           for s in schemes}

    # memory bandwidth and the non-GEMM FP64 rate
    a, b, c = np.zeros(stream_elements), np.ones(stream_elements), np.full(stream_elements, 2.0)
    triad(a, b, c, 3.0)
    run.add("stream", timed(lambda: triad(a, b, c, 3.0)))
    y = np.ones((64 * max(1, os.cpu_count() or 1), 64))
    fma_reps = 20000 if stream_elements >= 1 << 22 else 2000
    fma(y, 2, 0.999, 1e-3)
    run.add("fma", timed(lambda: fma(y, fma_reps, 0.999, 1e-3)))

    # native GEMM and the cpu-blas engine (both paths) at the calibration sizes
    blas = ozaki.get_engine("cpu-blas")
    for n in sizes:
        A, B = rng.standard_normal((n, n)), rng.standard_normal((n, n))
        out = np.empty((n, n))
        X, Y = _int_matrix(rng, (n, n), 127), _int_matrix(rng, (n, n), 127)
        h = max(1, math.isqrt(blas.fp32_bound // n))  # k h**2 <= 2**24: the FP32 path
        X32, Y32 = _int_matrix(rng, (n, n), h), _int_matrix(rng, (n, n), h)
        run.add(f"native:{n}", timed(lambda A=A, B=B, out=out: np.matmul(A, B, out=out)))
        run.add(f"engine:cpu-blas:{n}",
                timed(lambda X=X, Y=Y, out=out: blas.matmul(X, Y, 127, 127, out=out)))
        run.add(f"fp32:cpu-blas:{n}",
                timed(lambda X=X32, Y=Y32, h=h, out=out: blas.matmul(X, Y, h, h, out=out)))
    # simulation engines at small sizes
    for engine in engines:
        if engine == "cpu-blas":
            continue
        eng, amax = ozaki.get_engine(engine), _ENGINE_AMAX.get(engine, 16)
        for n in sorted(set(sim_sizes)):
            X, Y = _int_matrix(rng, (n, n), amax), _int_matrix(rng, (n, n), amax)
            eng.matmul(X, Y, amax, amax)  # first touch
            run.add(f"engine:{engine}:{n}",
                    timed(lambda eng=eng, X=X, Y=Y, amax=amax: eng.matmul(X, Y, amax, amax)))
    # ozaki phase timings at the calibration sizes
    for n in sizes:
        A, B = rng.standard_normal((n, n)), rng.standard_normal((n, n))
        for scheme in schemes:
            for mode in modes:
                run.add(f"ozaki:{scheme}:{mode}:{n}", _ozaki_call(A, B, scheme, mode))
    return Plan(tuple(sizes), tuple(sorted(set(sim_sizes))), tuple(engines), gpm,
                int(stream_elements), 2.0 * y.size * fma_reps, run.repeats, load_before, started)


def validation_tasks(run: Runner, sizes: Sequence[int], schemes: Sequence[str],
                     modes: Sequence[str], seed: int) -> None:
    """Add the validation runs to ``run``: numpy (``v:native::n``) and ``ozaki.dgemm``
    (``v:scheme:mode:n``, engine ``cpu-blas``, automatic moduli) on standard-normal
    operands at each size."""
    _warm_up()
    rng = np.random.default_rng(seed)
    for n in sorted({int(x) for x in sizes}):
        A, B = rng.standard_normal((n, n)), rng.standard_normal((n, n))
        out = np.empty((n, n))
        run.add(f"v:native::{n}", timed(lambda A=A, B=B, out=out: np.matmul(A, B, out=out)))
        for scheme in schemes:
            for mode in modes:
                run.add(f"v:{scheme}:{mode}:{n}", _ozaki_call(A, B, scheme, mode))
