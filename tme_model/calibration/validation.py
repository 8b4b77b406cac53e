"""Validation: the profile's predictions of ``ozaki.dgemm`` against measured times at
held-out sizes, and the same rows restated with another statistic or profile."""

from __future__ import annotations

from typing import Sequence

from ..profile import Profile
from .fft_check import FFT_CASES, fft_prediction, fft_rows, fft_tasks
from .fitting import bound_gemm_s, refined_gemms, refit
from .probes import VALIDATION_SIZES, ozaki_names, summarise_record, validation_tasks
from .runner import Runner, check_statistic, summarise

__all__ = ["restate", "restate_minima", "validate", "validation_rows"]


def validate(profile: Profile, sizes: Sequence[int] = VALIDATION_SIZES, *, repeats: int = 3,
             schemes: Sequence[str] | None = None, modes: Sequence[str] | None = None,
             progress: bool = True, seed: int = 1, statistic: str = "median",
             fft_cases: Sequence = FFT_CASES) -> list[dict]:
    """Time ``ozaki.dgemm`` (engine ``cpu-blas``, automatic moduli) and numpy at held-out
    sizes, and FFTs, and compare with the profile's predictions.

    Parameters
    ----------
    profile : Profile
        A calibration profile with ``cpu-blas`` rates and phase costs.
    sizes : sequence of int
        Square sizes n.
    repeats : int
        Runs per configuration (interleaved); the median is reported.
    schemes, modes : sequence of str, optional
        ozaki configurations (default ``ozaki.MODES``, and those of ``ozaki.SCHEMES``
        the profile has a ``cpu-blas`` rate for: a profile written before a scheme
        existed validates what it holds).
    progress : bool
        tqdm progress bar on stderr.
    seed : int
        Seed of the random (standard normal) operands and of the run order.
    statistic : {"median", "min"}
        How the runs of one configuration are summarised.
    fft_cases : sequence of (shape, axes)
        FFT cases (:data:`~.fft_check.FFT_CASES`; empty: none), each timed with the
        default plans and with native plans (:mod:`~.fft_check`).

    Returns
    -------
    list of dict
        One row per (n, scheme, mode), plus ``scheme="native"`` (numpy) per n, with keys
        ``n, scheme, mode, num_moduli, gemms, predicted_s, measured_s, ratio`` (predicted
        over measured) and the predicted and measured phases; then the FFT rows
        (``kind="fft"``, :func:`~.fft_check.fft_rows`).
    """
    check_statistic(statistic)
    all_schemes, all_modes, _ = ozaki_names()
    run = Runner(repeats, progress, "tme-calibrate --validate", seed)
    if schemes is None:
        schemes = [s for s in all_schemes if "cpu-blas" in profile.lowp_tflops.get(s, {})]
    validation_tasks(run, sizes, schemes,
                     all_modes if modes is None else modes, seed)
    fft_tasks(run, fft_cases, seed)
    return validation_rows(run.run(), profile, statistic)


def restate(rows: list[dict], profile: Profile, statistic: str = "median") -> list[dict]:
    """Rows of :func:`validate` summarised again from their runs (``measured_runs``) with
    another statistic, and predicted by another profile (e.g. :func:`~.fitting.refit`).

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
    check_statistic(statistic)
    out = []
    for r in rows:
        n = r["n"]
        if r.get("kind") == "fft":
            pred = fft_prediction(r["shape"], r["axes"], r["scheme"] == "fft native", profile)[1].total_s
        elif r["scheme"] == "native":
            pred = profile.native_gemm_s(n, n, n)
        else:
            pred = profile.predict_gemm(r["scheme"], r["num_moduli"], r["mode"], n, n, n,
                                        engine="cpu-blas",
                                        refined_block=tuple(r.get("refined_block", (0, 0))),
                                        refined_gemms=refined_gemms(r)).total_s
        meas = summarise(r["measured_runs"], statistic)
        new = {k: v for k, v in r.items() if k not in ("predicted_phases", "measured_phases")}
        new.update(predicted_s=pred, measured_s=meas, ratio=pred / meas, statistic=statistic)
        out.append(new)
    return out


def validation_rows(res: dict, profile: Profile, statistic: str) -> list[dict]:
    """The rows of :func:`validate` from the runs of its tasks (keys ``v:...``)."""
    _, _, phase_names = ozaki_names()
    rows = []
    for key, recs in res.items():
        if not key.startswith("v:"):  # (FFT rows: vfft:, below)
            continue
        _, scheme, mode, n = key.split(":")
        n = int(n)
        if scheme == "native":
            meas = summarise(recs, statistic)
            pred = profile.native_gemm_s(n, n, n)
            rows.append({"n": n, "scheme": "native", "mode": "", "num_moduli": None, "gemms": 1,
                         "predicted_s": pred, "measured_s": meas, "ratio": pred / meas,
                         "runs": len(recs), "measured_runs": list(recs)})
            continue
        r = summarise_record(recs, statistic)
        refined, gemms = tuple(r.get("refined_block", (0, 0))), refined_gemms(r)
        t = profile.predict_gemm(scheme, r["num_moduli"], mode, n, n, n, engine="cpu-blas",
                                 refined_block=refined, refined_gemms=gemms)
        bound = (bound_gemm_s(profile, scheme, r["num_moduli"], n, refined, gemms)
                 if mode == "accurate" else 0.0)
        rows.append({
            "n": n, "scheme": scheme, "mode": mode, "num_moduli": r["num_moduli"],
            "gemms": r["gemms"], "predicted_s": t.total_s, "measured_s": r["wall"],
            "ratio": t.total_s / r["wall"], "runs": r["runs"], "refined_block": list(refined),
            "fallback_entries": max(x.get("fallback_entries", 0) for x in recs),
            "measured_runs": [x["wall"] for x in recs], "statistic": statistic,
            "predicted_phases": {"scaling": t.scale_s + bound, "residues": t.residue_s,
                                 "products": t.gemm_s - bound, "reconstruction": t.recon_s,
                                 "fixed": t.fixed_s},
            "measured_phases": {p: r[f"t_{p}"] for p in phase_names},
        })
    rows.sort(key=lambda r: (r["n"], r["scheme"] != "native", r["scheme"], r["mode"]))
    return rows + fft_rows(res, profile, statistic)


def restate_minima(rows: list[dict], profile: Profile) -> list[dict] | None:
    """The rows restated from the minima of their runs, predicted by ``profile`` refitted
    from minima (:func:`~.fitting.refit`); ``None`` when the profile keeps no runs."""
    if "runs" not in profile.meta.get("calibration", {}):
        return None
    return restate(rows, refit(profile, "min"), "min")
