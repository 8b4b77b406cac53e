"""FFT rows of the held-out check: :func:`fft.fft` and :func:`fft.fft2` timed, and
predicted from their plans (:func:`tme_model.fft_workload.predict_fft`).

Each case runs the default plans (emulated stages) and the same plans on native FP64
GEMMs (``fft.Plan(n, native=True)`` passed as ``plan=``).  ``fft`` is imported inside
the functions; without it there are no FFT rows.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from ..fft_workload import fft_workload, predict_fft
from ..profile import Profile
from .runner import Runner, summarise, timed

__all__ = ["FFT_CASES", "QUICK_FFT_CASES", "fft_prediction", "fft_rows", "fft_tasks"]

#: Held-out FFT cases: (shape of the complex input, transformed axes).  1-D N = 2**14
#: along the last axis of a batch of 16, and 2-D 256 x 256.
FFT_CASES: tuple[tuple[tuple[int, ...], tuple[int, ...]], ...] = (
    ((16, 1 << 14), (-1,)), ((256, 256), (-2, -1)))
#: ``--quick``: tiny FFT cases.
QUICK_FFT_CASES: tuple[tuple[tuple[int, ...], tuple[int, ...]], ...] = (
    ((4, 256), (-1,)), ((32, 32), (-2, -1)))
_PREFIX = "vfft:"


def _available() -> bool:
    try:
        import fft  # noqa: F401
    except ImportError:  # pragma: no cover - fft ships with ozaki-emu
        return False
    return True


def _key(shape, axes, native: bool) -> str:
    return (f"{_PREFIX}{'native' if native else 'emulated'}:{'x'.join(map(str, shape))}:"
            f"{','.join(map(str, axes))}")


def _parse(key: str) -> tuple[tuple[int, ...], tuple[int, ...], bool]:
    _, kind, shape, axes = key.split(":")
    return (tuple(int(d) for d in shape.split("x")), tuple(int(a) for a in axes.split(",")),
            kind == "native")


def _plans(shape, axes, native: bool) -> list:
    import fft

    return [fft.Plan(shape[a], native=True) if native else fft.get_plan(shape[a]) for a in axes]


def _transform(x: np.ndarray, axes: tuple[int, ...], plans: list):
    import fft

    if len(axes) == 1:
        return lambda: fft.fft(x, axis=axes[0], plan=plans[0])
    if len(axes) == 2:
        return lambda: fft.fft2(x, axes=axes, plan=plans)
    return lambda: fft.fftn(x, axes=axes, plan=plans)


def fft_tasks(run: Runner, cases: Sequence, seed: int) -> None:
    """Add the FFT runs to ``run`` (keys ``vfft:emulated|native:SHAPE:AXES``): each case
    with the default plans and with native plans, on standard-normal complex input.  The
    plans are made and run once before anything is timed."""
    if not cases or not _available():
        return
    rng = np.random.default_rng(seed)
    for shape, axes in cases:
        shape, axes = tuple(int(d) for d in shape), tuple(int(a) for a in axes)
        x = rng.standard_normal(shape) + 1j * rng.standard_normal(shape)
        for native in (False, True):
            fn = _transform(x, axes, _plans(shape, axes, native))
            fn()
            run.add(_key(shape, axes, native), timed(fn))


def fft_prediction(shape, axes, native: bool, profile: Profile):
    """The workload of a case and its predicted time (:class:`~tme_model.fft_workload.FFTTime`)."""
    w = fft_workload(shape, axes, plans=_plans(shape, axes, native))
    return w, predict_fft(w, profile)


def fft_rows(res: dict, profile: Profile, statistic: str) -> list[dict]:
    """The FFT rows of the validation from the runs of :func:`fft_tasks`.

    Returns
    -------
    list of dict
        Per case and plan kind: ``kind="fft"``, ``n`` (the shape, e.g. ``"16x16384"``),
        ``shape``, ``axes``, ``scheme`` (``"fft"`` or ``"fft native"``), ``mode``,
        ``num_moduli`` (largest stage count), ``gemms`` (stage products on native plans,
        low-precision GEMMs otherwise), ``predicted_s``, ``measured_s``, ``ratio``, the
        runs and the predicted parts (stage products, twiddles, layout passes).
    """
    rows = []
    for key, runs in res.items():
        if not key.startswith(_PREFIX):
            continue
        shape, axes, native = _parse(key)
        w, t = fft_prediction(shape, axes, native, profile)
        meas = summarise(runs, statistic)
        counts = [s.num_moduli for s in w.stages]
        rows.append({
            "kind": "fft", "n": "x".join(map(str, shape)), "shape": list(shape), "axes": list(axes),
            "scheme": "fft native" if native else "fft", "mode": "" if native else w.mode,
            "num_moduli": None if native else max(counts), "gemms": len(w.stages) if native else w.gemms,
            "predicted_s": t.total_s, "measured_s": meas, "ratio": t.total_s / meas,
            "runs": len(runs), "measured_runs": list(runs), "statistic": statistic,
            "predicted_phases": {"products": math.fsum(t.gemm_s), "twiddles": t.twiddle_s,
                                 "layout": t.layout_s},
        })
    rows.sort(key=lambda r: (math.prod(r["shape"]), r["n"], r["scheme"]))
    return rows
