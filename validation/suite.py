"""Run ozaki on every case, scheme, mode and count; measure, check, record.

Failures (the exit status): an entry beyond ``info.error_bound``; a result in
accurate mode that info calls certified but that misses the target
``u |AB| + u |A||B|`` (entries replaced by the native fallback are reported, not
failures); a certified fast-mode result beyond ``u ||a_i|| ||b_j||``; an integer
product that certified runs do not reproduce exactly; an ``info`` that misreports
the fallback; ``fallback="raise"`` that does not raise; a simulated engine whose
certified entries differ from ``cpu-blas`` bitwise.
"""

from __future__ import annotations

import time

import numpy as np

import ozaki
from ozaki.certify import CertificationError
from ozaki.moduli import MODULI

from .families import ALL, Case, build
from .metrics import Reference, bound_stats, normwise_limit, summarize

SCHEMES = ("int8", "fp8", "fp64")
MODES = ("accurate", "fast")
ENGINE_CHECK_LIMIT = 2 ** 26  # m n k up to which the scheme's own engine is compared


def counts_for(case: Case, scheme: str) -> list:
    top = len(MODULI[scheme])
    counts = range(2, top + 1) if case.counts == ALL else [c for c in case.counts if c <= top]
    return list(counts) + ["auto"]


def total_runs(cases) -> int:
    return sum(len(counts_for(c, s)) * len(MODES) for c in cases for s in SCHEMES)


def _info(info) -> dict:
    return {"num_moduli": info.num_moduli, "gemms": info.gemms,
            "seconds": float(sum(info.seconds.values())), "bound_kind": info.bound_kind,
            "max_bound_ratio": float(info.max_bound_ratio), "uncertified": info.uncertified,
            "certified": bool(info.certified), "fallback": info.fallback,
            "fallback_entries": info.fallback_entries,
            "fallback_block": list(info.fallback_block)}


class CaseRun:
    """All runs of one case; ``failures`` collects every broken promise."""

    def __init__(self, case: Case):
        self.case = case
        self.A, self.B = build(case)
        t0 = time.perf_counter()
        self.ref = Reference(self.A, self.B, force_dd=case.params.get("ref") == "dd")
        self.ref_seconds = time.perf_counter() - t0
        self.nwise = normwise_limit(self.A, self.B)
        self.runs: list[dict] = []
        self.failures: list[dict] = []

    def fail(self, rec: dict, check: str, mask: np.ndarray, measured, limit, note: str = ""):
        if not mask.any():
            return
        i, j = (int(x) for x in np.argwhere(mask)[0])
        m = measured[i, j] if isinstance(measured, np.ndarray) else measured
        lim = limit[i, j] if isinstance(limit, np.ndarray) else limit
        self.failures.append({
            "case": self.case.name, "scheme": rec["scheme"], "mode": rec["mode"],
            "requested": rec["requested"], "num_moduli": rec.get("num_moduli"),
            "check": check, "entries": int(mask.sum()), "first": [i, j],
            "measured": float(m), "limit": float(lim), "note": note})
        rec.setdefault("failed_checks", []).append(check)

    def _measure(self, rec, C, info, mask=None):
        """Metrics and checks for one result; ``mask``: entries replaced natively."""
        ref = self.ref
        err = ref.errors(C)
        rec.update(summarize(ref, err[0]))
        own = np.ones(C.shape, bool) if mask is None else ~mask
        if info.error_bound is not None:
            eb = info.error_bound
            rec["bound"] = bound_stats(ref, err[0], eb)
            self.fail(rec, "bound", ref.exceeds(C, eb, err), err[0], eb)
        if rec["mode"] == "accurate" and info.certified or (
                rec["requested"] == "auto" and rec["mode"] == "accurate"):
            self.fail(rec, "target", ref.misses_target(C, err, own), err[0], ref.target())
        if rec["mode"] == "fast" and info.certified and info.fallback == "none":
            self.fail(rec, "normwise", ref.exceeds(C, self.nwise, err), err[0], self.nwise)
        if self.case.family == "integer" and ref.exact and (
                info.certified or rec["requested"] == "auto"):
            self.fail(rec, "integer-inexact", (C != ref.S) & own, err[0], 0.0)

    def run(self, scheme: str, mode: str, count, update=None):
        A, B = self.A, self.B
        rec = {"scheme": scheme, "mode": mode, "requested": count}
        accurate = mode == "accurate"
        C, info = ozaki.dgemm(A, B, scheme=scheme, num_moduli=count, mode=mode,
                              bounds=accurate, return_info=True)
        rec.update(_info(info))
        mask = None
        if count == "auto" and accurate:
            mask = self._auto_extras(rec, C, info, scheme)
        self._measure(rec, C, info, mask)
        self.runs.append(rec)
        if update:
            update(1)

    def _auto_extras(self, rec, C, info, scheme):
        """Auto in accurate mode: where the fallback acted, raise, the scheme's engine."""
        A, B = self.A, self.B
        C0, info0 = ozaki.dgemm(A, B, scheme=scheme, mode="accurate", fallback="none",
                                bounds=True, return_info=True)
        mask = (C != C0) | (info.error_bound != info0.error_bound)
        rec["no_fallback"] = summarize(self.ref, self.ref.errors(C0)[0])
        rec["no_fallback"]["uncertified"] = info0.uncertified
        if info0.num_moduli != info.num_moduli or int(mask.sum()) != info.fallback_entries:
            self.fail(rec, "fallback-info", np.ones((1, 1), bool), int(mask.sum()),
                      info.fallback_entries,
                      note=f"counts {info.num_moduli}/{info0.num_moduli}")
        if info0.uncertified:
            try:
                ozaki.dgemm(A, B, scheme=scheme, mode="accurate", fallback="raise")
                self.fail(rec, "raise", np.ones((1, 1), bool), info0.uncertified, 0)
            except CertificationError as exc:
                rec["raise_message"] = str(exc)
        m, k = A.shape
        if scheme != "fp64" and m * B.shape[1] * k <= ENGINE_CHECK_LIMIT:
            Ce, infoe = ozaki.dgemm(A, B, scheme=scheme, engine=f"cpu-{scheme}",
                                    return_info=True)
            rec["unit_engine"] = infoe.engine
            rec["unit_gemms"] = infoe.gemms
            diff = (Ce != C) & ~mask & ~(np.isnan(Ce) & np.isnan(C))
            self.fail(rec, "engine-bitwise", diff, Ce, C)
        return mask

    def native(self) -> dict:
        C = self.A @ self.B
        return summarize(self.ref, self.ref.errors(C)[0])


def run_case(case: Case, update=None) -> dict:
    cr = CaseRun(case)
    t0 = time.perf_counter()
    for scheme in SCHEMES:
        for mode in MODES:
            for count in counts_for(case, scheme):
                cr.run(scheme, mode, count, update)
    c = case
    return {"name": c.name, "family": c.family, "m": c.m, "n": c.n, "k": c.k,
            "phi": c.phi, "phi_label": c.phi_label, "params": c.params,
            "reference": {"kind": cr.ref.kind, "seconds": cr.ref_seconds, **cr.ref.checks},
            "native": cr.native(), "runs": cr.runs, "failures": cr.failures,
            "seconds": time.perf_counter() - t0}
