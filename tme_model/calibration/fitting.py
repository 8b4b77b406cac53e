"""Fitting a profile to the runs of a calibration: GEMM rate models and phase costs.

``r(s) = r_inf s / (s + n0)`` with s = (mnk)^(1/3) is fitted by least squares in the
relative time error, ``T = 2mnk (1 + n0 / s) / r_inf``; the O(n^2) phase costs of
``ozaki.dgemm`` by non-negative least squares on its phase timings.
"""

from __future__ import annotations

import datetime as _dt
import platform
import time
from dataclasses import dataclass, replace
from typing import Sequence

import numpy as np

from ..profile import PhaseCosts, Profile, gemm_paths
from ..specs import TMEError
from .probes import Plan, host, loadavg, ozaki_names, summarise_record
from .runner import check_statistic, summarise

__all__ = ["RateFit", "bound_gemm_s", "fit_calibration", "fit_rate", "refit"]

#: Schemes a simulation engine is recorded under.
_SIM_SCHEMES = {"cpu-fp8": ("fp8",), "cpu-int8": ("int8", "fp8"), "cpu-onednn": ("int8", "fp8")}


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


def _engine_rates(res: dict, plan: Plan, statistic: str) -> tuple[dict, dict, dict]:
    """Rates and size efficiencies of the exact-GEMM engines, and their raw summaries."""
    import ozaki

    schemes, modes, _ = ozaki_names()
    lowp: dict[str, dict[str, float]] = {}
    lowp_n0: dict[str, dict[str, float]] = {}
    raw: dict[str, dict[str, float]] = {}

    def blas_gemm_samples(n: int) -> list[float]:
        # every timing of one FP64-path cpu-blas GEMM at size n: the standalone runs, and
        # the products phase of each ozaki call whose products all take that path,
        # divided by its GEMM count (the same BLAS call on integer-valued operands)
        xs = list(res[f"engine:cpu-blas:{n}"])
        for scheme in schemes:
            g = plan.gemms_per_modulus.get(scheme, {}).get("cpu-blas", 1)
            for mode in modes:
                for r in res[f"ozaki:{scheme}:{mode}:{n}"]:
                    if not any(f for _, f in gemm_paths(scheme, r["num_moduli"], "fast", n, "cpu-blas")):
                        xs.append(r["t_products"] / (g * r["num_moduli"]))
        return xs

    for engine in plan.engines:
        ns = plan.sizes if engine == "cpu-blas" else plan.sim_sizes
        raw[engine] = {str(n): summarise(res[f"engine:{engine}:{n}"], statistic) for n in ns}
        if engine == "cpu-blas":
            secs = [summarise(blas_gemm_samples(n), statistic) for n in ns]
            raw["cpu-blas (pooled with ozaki products)"] = {str(n): t for n, t in zip(ns, secs)}
        else:
            secs = [raw[engine][str(n)] for n in ns]
        fit = fit_rate([(n, n, n) for n in ns], secs)
        runs = ozaki.get_engine(engine).schemes
        for scheme in (runs if engine == "cpu-blas" else _SIM_SCHEMES.get(engine, ())):
            if scheme in runs:
                lowp.setdefault(scheme, {})[engine] = fit.tflops
                lowp_n0.setdefault(scheme, {})[engine] = fit.n0
    return lowp, lowp_n0, raw


def fit_calibration(res: dict, plan: Plan, statistic: str, extra: dict | None = None) -> Profile:
    """Fit a profile (device ``local``) to the runs of a calibration.

    Parameters
    ----------
    res : dict
        Task key -> runs, as :meth:`~.runner.Runner.run` returns them.
    plan : Plan
        What was measured (:func:`~.probes.calibration_tasks`).
    statistic : {"median", "min"}
        How the runs of one measurement are summarised.
    extra : dict, optional
        More keys for ``meta["calibration"]``.

    Returns
    -------
    Profile
        The fitted profile; every run and the fits are kept under ``meta["calibration"]``.
    """
    check_statistic(statistic)
    sizes, shapes = plan.sizes, [(n, n, n) for n in plan.sizes]
    mem_tbps = 24.0 * plan.stream_elements / summarise(res["stream"], statistic) / 1e12
    vec_tflops = plan.fma_flops / summarise(res["fma"], statistic) / 1e12
    native = fit_rate(shapes, [summarise(res[f"native:{n}"], statistic) for n in sizes])
    lowp, lowp_n0, raw_engines = _engine_rates(res, plan, statistic)
    gpm = {s: {e: g for e, g in d.items() if e in lowp.get(s, {})} for s, d in plan.gemms_per_modulus.items()}
    fp32, fp32_n0 = {}, {}
    if all(f"fp32:cpu-blas:{n}" in res for n in sizes):  # (profiles before the FP32 path)
        secs = [summarise(res[f"fp32:cpu-blas:{n}"], statistic) for n in sizes]
        raw_engines["cpu-blas (FP32 path)"] = {str(n): t for n, t in zip(sizes, secs)}
        fit = fit_rate(shapes, secs)
        fp32, fp32_n0 = {"cpu-blas": fit.tflops}, {"cpu-blas": fit.n0}
    paths = dict(fp64_n0=native.n0, lowp_n0=lowp_n0, gemms_per_modulus=gpm,
                 fp32_tflops=fp32, fp32_n0=fp32_n0)

    base = Profile("local", native.tflops, vec_tflops, mem_tbps, lowp, {}, {}, "", **paths)
    schemes, modes, _ = ozaki_names()
    phases: dict[str, PhaseCosts] = {}
    ozaki_raw: dict[str, dict] = {}
    fit_report: dict[str, dict] = {}
    for scheme in schemes:
        recs = {(mode, n): summarise_record(res[f"ozaki:{scheme}:{mode}:{n}"], statistic)
                for mode in modes for n in sizes}
        ozaki_raw[scheme] = {f"{mode}:{n}": r for (mode, n), r in recs.items()}
        phases[scheme], fit_report[scheme] = _fit_phases(base, scheme, recs, statistic)

    calibration = {
        "tool": "tme-calibrate",
        "sizes": list(sizes), "repeats": plan.repeats, "statistic": statistic,
        "sim_sizes": list(plan.sim_sizes), "stream_elements": plan.stream_elements,
        "stream_bytes_per_element": 24,
        "seconds": None if plan.started is None else round(time.perf_counter() - plan.started, 1),
        "fma_flops": plan.fma_flops,
        "loadavg_before": plan.loadavg_before, "loadavg_after": loadavg(),
        "native_seconds": {str(n): summarise(res[f"native:{n}"], statistic) for n in sizes},
        "engine_seconds": raw_engines,
        "ozaki": ozaki_raw,
        "phase_fit": fit_report,
        "rate_model": "rate(s) = tflops * s / (s + n0), s = (m n k)^(1/3)",
        "runs": {k: v for k, v in res.items() if not k.startswith("v:")},
        **(extra or {}),
    }
    meta = {"description": f"this machine ({platform.node() or 'local'}), calibrated by tme-calibrate",
            "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
            "host": host(), "calibration": calibration}
    return Profile("local", native.tflops, vec_tflops, mem_tbps, lowp, phases, meta, "", **paths)


def _fit_phases(base: Profile, scheme: str, recs: dict[tuple[str, int], dict],
                statistic: str) -> tuple[PhaseCosts, dict]:
    """Least-squares phase costs of one scheme from its summarised phase timings."""
    _, _, phase_names = ozaki_names()
    res_rows, res_t, rec_rows, rec_t, sc_rows, sc_t, outside = [], [], [], [], [], [], []
    for (mode, n), r in recs.items():
        N, n_in, n_out = r["num_moduli"], 2 * n * n, n * n
        res_rows.append([N * n_in, 1.0])
        res_t.append(r["t_residues"])
        rec_rows.append([N * n_out, 1.0])
        rec_t.append(r["t_reconstruction"])
        scale = r["t_scaling"]
        if mode == "accurate":  # ozaki books the bound GEMM under scaling
            scale -= bound_gemm_s(base, scheme, N, n, r.get("refined_block", (0, 0)),
                                  refined_gemms(r))
            sc_rows.append([n_in, n_in, 1.0])
        else:
            sc_rows.append([n_in, 0.0, 1.0])
        sc_t.append(max(scale, 1e-7))
        outside.append(max(0.0, r["wall"] - sum(r[f"t_{p}"] for p in phase_names)))
    r_el, f_r = _nnls(res_rows, res_t)
    c_el, f_c = _nnls(rec_rows, rec_t)
    s_el, s_acc, f_s = _nnls(sc_rows, sc_t)
    out_s = summarise(outside, statistic)
    costs = PhaseCosts(scale_s_per_element=float(s_el), accurate_scale_s_per_element=float(s_acc),
                       residue_s_per_element_modulus=float(r_el),
                       recon_s_per_output_modulus=float(c_el),
                       fixed_s=float(f_r + f_c + f_s + out_s))
    # products phase against the engine rate: how well the GEMM term is predicted
    prod = {f"{mode}:{n}": float(r["t_products"]) / base.predict_gemm(
        scheme, r["num_moduli"], "fast", n, n, n, engine="cpu-blas").gemm_s
        for (mode, n), r in recs.items()}
    report = {"intercepts_s": {"residues": float(f_r), "reconstruction": float(f_c), "scaling": float(f_s),
                               "outside_phases": out_s},
              "products_measured_over_engine_model": prod}
    return costs, report


def refined_gemms(record: dict) -> int:
    """The refinement's FP64 GEMMs in a cpu-blas accurate-mode record (one GEMM a
    modulus there): ``gemms`` less the products and the bound GEMM; 1 when the record
    predates the count."""
    if "gemms" not in record or not any(record.get("refined_block", (0, 0))):
        return 1
    return int(min(3, max(0, record["gemms"] - record["num_moduli"] - 1)))


def bound_gemm_s(profile: Profile, scheme: str, moduli: int, n: int, refined=(0, 0),
                 gemms: int = 1) -> float:
    """Predicted time of the accurate-mode bound GEMMs at size n (cpu-blas): the coarse
    one and the refinement's ``gemms`` GEMMs of ``refined`` (rows, columns); ozaki books
    them as scaling."""
    acc = profile.predict_gemm(scheme, moduli, "accurate", n, n, n, engine="cpu-blas",
                               refined_block=tuple(refined), refined_gemms=gemms)
    return acc.gemm_s - profile.predict_gemm(scheme, moduli, "fast", n, n, n, engine="cpu-blas").gemm_s


def refit(profile: Profile, statistic: str = "median") -> Profile:
    """Fit a profile again from the runs it keeps, with another statistic.

    Parameters
    ----------
    profile : Profile
        A profile written by :func:`~tme_model.calibration.calibrate` (it keeps every run).
    statistic : {"median", "min"}
        How the runs of one measurement are summarised.

    Returns
    -------
    Profile
        The refitted profile (same runs, same metadata otherwise); ``profile`` is not
        modified.
    """
    check_statistic(statistic)
    c = profile.meta.get("calibration", {})
    if "runs" not in c:
        raise TMEError(f"profile {profile.path or profile.name} keeps no runs to refit")
    engines = tuple(e for e in c["engine_seconds"] if not e.startswith("cpu-blas ("))
    plan = Plan(tuple(c["sizes"]), tuple(sorted(set(c["sim_sizes"]))), engines,
                {s: dict(d) for s, d in profile.gemms_per_modulus.items()},
                c["stream_elements"], c["fma_flops"], c["repeats"], c.get("loadavg_before"), None)
    new = fit_calibration(c["runs"], plan, statistic, {"refit_from": profile.path or "profile"})
    kept = {key: profile.meta[key] for key in ("created", "host", "description") if key in profile.meta}
    return replace(new, meta={**new.meta, **kept})
