"""pytest-benchmark suite: :mod:`fft` against the same plans on native GEMMs and scipy.fft.

Run with ``make bench`` (all of ``benchmarks/``) or
``pytest benchmarks/test_fft_bench.py --benchmark-enable``. Each case times the
emulated transform (default plans: fp64 scheme, fast mode, the count fixed per
stage), the same transform with ``fft.Plan(n, native=True)`` passed as ``plan=``
(the stages on numpy's FP64 GEMMs), and ``scipy.fft`` (``workers=-1``: all cores,
as the emulated stages use), in rotation in the same session (median over the
rounds after one warm-up), and records the ratios in ``extra_info`` next to
their goals:

================================  ==================  =====
case                              baseline            goal
================================  ==================  =====
every case                        native plan         12x
1-D complex, N = 2**20            ``scipy.fft.fft``   50x
3-D complex, 128**3               ``scipy.fft.fftn``  50x
512 x N = 4096, last axis         ``scipy.fft.fft``   100x
================================  ==================  =====

``extra_info`` also has the share of the emulated time inside the plans' stages
(products and twiddles, from :func:`fft.stage_records` of one more call) and, when ``docs/_generated/tme_profile.json`` is
present, the time :func:`tme_model.fft_workload.predict_fft` predicts from it.

The real-to-real transforms (:func:`test_r2r_against_baselines`) are timed the same way
against the same transform with native products (``fft.realtransforms.plan_options(
native=True)``: every plan the transform takes, and a short line's direct product, on
numpy's FP64 GEMMs; the passes and twiddles unchanged) and against ``scipy.fft``:

==============================  ==================  =====
case                            baseline            goal
==============================  ==================  =====
every case                      native products     12x
DCT-I..IV, DST-IV, N = 2**20    ``scipy.fft.dct``   30x
DCT-II 3-D, 128**3              ``scipy.fft.dctn``  30x
==============================  ==================  =====

``OZAKI_BENCH_SMALL=1`` shrinks every case 8-64x for a quick look.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

import ozaki

import fft
from bench_common import cpu_model, rotate  # benchmarks/ (conftest puts it on the path)
from fft.realtransforms import plan_options
from fft.reduced import reduction

SMALL = os.environ.get("OZAKI_BENCH_SMALL") == "1"
PROFILE = Path(__file__).resolve().parents[1] / "docs" / "_generated" / "tme_profile.json"

#: (label, shape, axes, goal against scipy.fft); every case: 12x against the native plan.
CASES = [
    ("1-D N=2^20", (1 << 20,), (-1,), 50.0),
    ("3-D 128^3", (128, 128, 128), (0, 1, 2), 50.0),
    ("512 x N=4096", (512, 4096), (-1,), 100.0),
] if not SMALL else [
    ("1-D N=2^16", (1 << 16,), (-1,), 50.0),
    ("3-D 32^3", (32, 32, 32), (0, 1, 2), 50.0),
    ("64 x N=4096", (64, 4096), (-1,), 100.0),
]
NATIVE_PLAN_GOAL = 12.0


def _predicted(shape, axes) -> float | None:
    """The TME model's time for the default plans, or ``None`` where the calibrated
    profile has no rate for the engine they run (it was measured on ``cpu-blas``; on a
    machine whose fast-mode plans run int8 on ``cpu-onednn``, recalibrate)."""
    if not PROFILE.exists():
        return None
    from tme_model.fft_workload import fft_workload, predict_fft
    from tme_model.profile_file import load_profile
    from tme_model.specs import TMEError

    try:
        return predict_fft(fft_workload(shape, axes), load_profile(PROFILE)).total_s
    except TMEError:
        return None


@pytest.mark.parametrize("label,shape,axes,scipy_goal", CASES, ids=[c[0] for c in CASES])
def test_fft_against_baselines(benchmark, rounds, label, shape, axes, scipy_goal):
    import scipy.fft

    rng = np.random.default_rng(len(shape) * shape[-1])
    x = rng.standard_normal(shape) + 1j * rng.standard_normal(shape)
    native = [fft.Plan(shape[a], native=True) for a in axes]
    if len(axes) == 1:
        def ours(): return fft.fft(x, axis=axes[0])
        def plan(): return fft.fft(x, axis=axes[0], plan=native[0])
        def ref(): return scipy.fft.fft(x, axis=axes[0], workers=-1)
    else:
        def ours(): return fft.fftn(x, axes=axes)
        def plan(): return fft.fftn(x, axes=axes, plan=native)
        def ref(): return scipy.fft.fftn(x, axes=axes, workers=-1)
    te, tp, ts = rotate([ours, plan, ref], rounds)
    with fft.stage_records() as stages:
        ours()
    emulated = [s for s in stages if s.gemms]
    benchmark.group = "fft"
    benchmark.pedantic(lambda: None, rounds=1, iterations=1)
    pred = _predicted(shape, axes)
    benchmark.extra_info.update(
        case=label, shape=list(shape), axes=list(axes), emulated_s=te, native_plan_s=tp, scipy_s=ts,
        ratio_native_plan=te / tp, goal_native_plan=NATIVE_PLAN_GOAL,
        meets_native_plan_goal=bool(te / tp <= NATIVE_PLAN_GOAL),
        ratio_scipy=te / ts, goal_scipy=scipy_goal, meets_scipy_goal=bool(te / ts <= scipy_goal),
        radices={str(shape[a]): fft.get_plan(shape[a]).radices for a in axes},
        gemms=sum(s.gemms for s in emulated), num_moduli=sorted({s.num_moduli for s in emulated}),
        stage_share=sum(s.seconds for s in stages) / max(te, 1e-12),
        predicted_s=pred, predicted_over_measured=None if pred is None else pred / te)
    # the three agree (the emulated transform is the accurate one; this checks the setup)
    y, yp, ys = ours(), plan(), ref()
    scale = np.linalg.norm(ys)
    assert np.linalg.norm(y - ys) <= 1e-13 * scale and np.linalg.norm(yp - ys) <= 1e-12 * scale


#: (label, function, type, shape, axes); goal: 12x the native products, 30x scipy.fft.
R2R_CASES = [
    ("dct-1 N=2^20", "dct", 1, (1 << 20,), (-1,)),
    ("dct-2 N=2^20", "dct", 2, (1 << 20,), (-1,)),
    ("dct-3 N=2^20", "dct", 3, (1 << 20,), (-1,)),
    ("dst-4 N=2^20", "dst", 4, (1 << 20,), (-1,)),
    ("dctn-2 128^3", "dctn", 2, (128, 128, 128), (0, 1, 2)),
] if not SMALL else [
    ("dct-1 N=2^16", "dct", 1, (1 << 16,), (-1,)),
    ("dct-2 N=2^16", "dct", 2, (1 << 16,), (-1,)),
    ("dct-3 N=2^16", "dct", 3, (1 << 16,), (-1,)),
    ("dst-4 N=2^16", "dst", 4, (1 << 16,), (-1,)),
    ("dctn-2 32^3", "dctn", 2, (32, 32, 32), (0, 1, 2)),
]
R2R_SCIPY_GOAL = 30.0


@pytest.mark.parametrize("label,name,t,shape,axes", R2R_CASES, ids=[c[0] for c in R2R_CASES])
def test_r2r_against_baselines(benchmark, rounds, label, name, t, shape, axes):
    import scipy.fft

    rng = np.random.default_rng(len(shape) * shape[-1] + t)
    x = rng.standard_normal(shape)
    kw = {"type": t, **({"axes": axes} if name.endswith("n") else {"axis": axes[0]})}
    f = getattr(fft, name)

    def ours(): return f(x, **kw)

    def native():
        with plan_options(native=True):
            return f(x, **kw)

    def ref(): return getattr(scipy.fft, name)(x, workers=-1, **kw)
    te, tn, ts = rotate([ours, native, ref], rounds)
    with fft.stage_records() as stages:
        ours()
    emulated = [s for s in stages if s.gemms]
    resolved = ozaki.resolve_options(**{k: v for k, v in vars(fft.get_plan(2).options).items()
                                        if k in ("scheme", "mode", "engine")})
    benchmark.group = "fft-r2r"
    benchmark.pedantic(lambda: None, rounds=1, iterations=1)
    benchmark.extra_info.update(
        case=label, function=name, type=t, shape=list(shape), axes=list(axes),
        reductions=sorted({reduction(t, shape[a]) for a in axes}),
        emulated_s=te, native_products_s=tn, scipy_s=ts,
        ratio_native_products=te / tn, goal_native_products=NATIVE_PLAN_GOAL,
        meets_native_products_goal=bool(te / tn <= NATIVE_PLAN_GOAL),
        ratio_scipy=te / ts, goal_scipy=R2R_SCIPY_GOAL,
        meets_scipy_goal=bool(te / ts <= R2R_SCIPY_GOAL),
        plan_scheme=resolved.scheme, plan_engine=type(resolved.engine).__name__, cpu=cpu_model(),
        gemms=sum(s.gemms for s in emulated), num_moduli=sorted({s.num_moduli for s in emulated}),
        stage_share=sum(s.seconds for s in stages) / max(te, 1e-12))
    # the three agree (the emulated transform is the accurate one; this checks the setup)
    y, yn, ys = ours(), native(), ref()
    scale = np.linalg.norm(ys)
    assert np.linalg.norm(y - ys) <= 1e-13 * scale and np.linalg.norm(yn - ys) <= 1e-12 * scale
