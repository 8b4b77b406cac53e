"""Run ozaki on every case, scheme, mode and count; measure, check, record.

Failures (the exit status):

* an entry beyond ``info.error_bound`` (``bound``), or a NaN bound (``bound-nan``),
  in both modes at every count;
* an accurate-mode result that ``info`` calls certified, or an auto result outside
  its exactly computed entries, that misses the target ``u |AB| + u |A||B|``;
  the same in fast mode against its normwise target ``u |AB| + u ||a_i|| ||b_j||``;
* an exactly computed entry that is not correctly rounded: the entries the exact
  fallback replaced (auto), and those the overflow guard must compute
  (``(|A||B|)_ij >= 2**1023``, every run);
* special values of finite inputs: any NaN, an infinity where the exact value fits,
  a finite value or the wrong infinity where it overflows (every run);
* an integer product that certified runs do not reproduce exactly;
* an ``info`` that misreports the fallback or the exact entries;
  ``fallback="raise"`` that does not raise; a simulated engine whose result
  differs from ``cpu-blas`` bitwise.

A failure that matches :data:`KNOWN_ISSUES` (an ozaki bug already reported) is
recorded and reported apart, and does not set the exit status.
"""

from __future__ import annotations

import time

import numpy as np

import ozaki
from ozaki import CertificationError

from .families import ALL, Case, build
from .metrics import bound_stats, make_reference, summarize

#: Every scheme ozaki offers (the tests pin this to ``ozaki.SCHEMES``), in report order.
SCHEMES = ("int8", "int7", "fp8", "fp64")
#: The simulated engine of each low-precision scheme's own unit (numpy integer and FP8
#: arithmetic): auto in accurate mode is run there too and compared bitwise with the
#: default engine's result (``cpu-onednn`` where installed, else ``cpu-blas``).
UNIT_ENGINES = {"int8": "cpu-int8", "int7": "cpu-int8", "fp8": "cpu-fp8"}
MODES = ("accurate", "fast")
ENGINE_CHECK_LIMIT = 2 ** 26  # m n k up to which the scheme's own engine is compared
SPECIAL_CHECKS = ("nan", "inf_where_finite", "overflow_wrong")

#: Reported ozaki bugs: a failure matching every key but ``issue`` is "known".
#: Remove an entry once ozaki is fixed (the report says when it no longer occurs).
#: Failures that match an entry here are reported apart and do not fail the run;
#: each entry names the ozaki bug (and is removed when it is fixed). None now.
KNOWN_ISSUES: tuple[dict, ...] = ()


def counts_for(case: Case, scheme: str) -> list:
    top = len(ozaki.moduli(scheme))
    counts = range(2, top + 1) if case.counts == ALL else [c for c in case.counts if c <= top]
    return list(counts) + ["auto"]


def total_runs(cases) -> int:
    return sum(len(counts_for(c, s)) * len(MODES) for c in cases for s in SCHEMES)


def _info(info) -> dict:
    return {"num_moduli": info.num_moduli, "gemms": info.gemms, "engine": info.engine,
            "seconds": float(sum(info.seconds.values())), "bound_kind": info.bound_kind,
            "max_bound_ratio": float(info.max_bound_ratio), "uncertified": info.uncertified,
            "certified": bool(info.certified), "fallback": info.fallback,
            "fallback_entries": info.fallback_entries,
            "fallback_block": list(info.fallback_block), "exact_entries": info.exact_entries,
            "path": info.path}


def known_issue(failure: dict) -> str | None:
    """The :data:`KNOWN_ISSUES` text that ``failure`` matches, or ``None``."""
    for known in KNOWN_ISSUES:
        if all(failure.get(key) == value for key, value in known.items() if key != "issue"):
            return known["issue"]
    return None


class CaseRun:
    """All runs of one case; ``failures`` collects every broken promise."""

    def __init__(self, case: Case):
        self.case = case
        self.A, self.B = build(case)
        if not (np.isfinite(self.A).all() and np.isfinite(self.B).all()):
            raise ValueError(f"case {case.name}: the suite's inputs must be finite")
        t0 = time.perf_counter()
        self.ref = make_reference(self.A, self.B, case.params.get("ref"))
        self.ref_seconds = time.perf_counter() - t0
        self.runs: list[dict] = []
        self.failures: list[dict] = []
        self.known: list[dict] = []

    def fail(self, rec: dict, check: str, mask: np.ndarray, measured, limit, note: str = ""):
        if not mask.any():
            return
        i, j = (int(x) for x in np.argwhere(mask)[0])
        m = measured[i, j] if isinstance(measured, np.ndarray) else measured
        lim = limit[i, j] if isinstance(limit, np.ndarray) else limit
        failure = {
            "case": self.case.name, "scheme": rec["scheme"], "mode": rec["mode"],
            "requested": rec["requested"], "num_moduli": rec.get("num_moduli"),
            "check": check, "entries": int(mask.sum()), "first": [i, j],
            "measured": float(m), "limit": float(lim), "note": note}
        issue = known_issue(failure)
        if issue is None:
            self.failures.append(failure)
            rec.setdefault("failed_checks", []).append(check)
        else:
            self.known.append({**failure, "issue": issue})
            rec.setdefault("known_issues", []).append(check)

    def _measure(self, rec, C, info, mask=None):
        """Metrics and checks for one result; ``mask``: entries the fallback replaced."""
        ref = self.ref
        err = ref.errors(C)
        rec.update(summarize(ref, err[0]))
        special = ref.special(C)
        rec["special"] = {name: int(special[name].sum()) for name in SPECIAL_CHECKS}
        for name in SPECIAL_CHECKS:
            self.fail(rec, name, special[name], C, ref.S)
        exact = ref.guard if mask is None else ref.guard | mask
        own = ~exact
        if info.error_bound is not None:
            eb = info.error_bound
            rec["bound"] = bound_stats(ref, err[0], eb)
            self.fail(rec, "bound", ref.exceeds(C, eb, err), err[0], eb)
            self.fail(rec, "bound-nan", np.isnan(eb), err[0], eb)
        self.fail(rec, "guard-rounding", ref.not_rounded(C, ref.guard), C, ref.S)
        if mask is not None:
            self.fail(rec, "fallback-rounding", ref.not_rounded(C, mask), C, ref.S)
        checked = info.certified or rec["requested"] == "auto"
        if checked and rec["mode"] == "accurate":
            self.fail(rec, "target", ref.misses_target(C, err, own), err[0], ref.target())
        if checked and rec["mode"] == "fast":
            self.fail(rec, "normwise", ref.misses_normwise(C, err, own), err[0],
                      ref.normwise_target())
        if self.case.family == "integer" and ref.exact and checked:
            self.fail(rec, "integer-inexact", (C != ref.S) & own, err[0], 0.0)

    def run(self, scheme: str, mode: str, count, update=None):
        A, B = self.A, self.B
        rec = {"scheme": scheme, "mode": mode, "requested": count}
        with np.errstate(over="ignore", invalid="ignore"):
            C, info = ozaki.dgemm(A, B, scheme=scheme, num_moduli=count, mode=mode,
                                  bounds=True, return_info=True)
        rec.update(_info(info))
        mask = self._auto_extras(rec, C, info, scheme, mode) if count == "auto" else None
        self._measure(rec, C, info, mask)
        self.runs.append(rec)
        if update:
            update(1)

    def _auto_extras(self, rec, C, info, scheme, mode):
        """Auto: where the exact fallback acted, raise, and (accurate) the scheme's engine.

        Returns the mask of the entries the fallback changed (value or bound)
        against a ``fallback="none"`` call. An entry that is both uncertified and
        guarded is exact in both calls, so the mask may hold fewer entries than
        ``info.fallback_entries``; the counts are checked to agree otherwise.
        """
        A, B = self.A, self.B
        C0, info0 = ozaki.dgemm(A, B, scheme=scheme, mode=mode, fallback="none",
                                bounds=True, return_info=True)
        with np.errstate(invalid="ignore"):
            mask = (C != C0) | (info.error_bound != info0.error_bound)
        mask &= ~(np.isnan(info.error_bound) & np.isnan(info0.error_bound))
        rec["no_fallback"] = summarize(self.ref, self.ref.errors(C0)[0])
        rec["no_fallback"]["uncertified"] = info0.uncertified
        fb, guarded = info.fallback_entries, info0.exact_entries
        if (info0.num_moduli != info.num_moduli or fb != info0.uncertified
                or int(mask.sum()) > fb or (fb > 0) != (info.fallback == "exact")
                or not max(fb, guarded) <= info.exact_entries <= fb + guarded):
            self.fail(rec, "fallback-info", np.ones((1, 1), bool), int(mask.sum()), fb,
                      note=f"counts {info.num_moduli}/{info0.num_moduli}, uncertified "
                           f"{info0.uncertified}, exact entries {info.exact_entries} "
                           f"(guard alone {guarded})")
        required = int(self.ref.guard.sum())
        if info.exact_entries < required:
            self.fail(rec, "guard-info", np.ones((1, 1), bool), info.exact_entries, required)
        if info0.uncertified:
            try:
                with np.errstate(over="ignore", invalid="ignore"):
                    ozaki.dgemm(A, B, scheme=scheme, mode=mode, fallback="raise")
                self.fail(rec, "raise", np.ones((1, 1), bool), info0.uncertified, 0)
            except CertificationError as exc:
                rec["raise_message"] = str(exc)
        m, k = A.shape
        if mode == "accurate" and scheme in UNIT_ENGINES \
                and m * B.shape[1] * k <= ENGINE_CHECK_LIMIT:
            with np.errstate(over="ignore", invalid="ignore"):
                Ce, infoe = ozaki.dgemm(A, B, scheme=scheme, engine=UNIT_ENGINES[scheme],
                                        return_info=True)
            rec["unit_engine"] = infoe.engine
            rec["unit_gemms"] = infoe.gemms
            diff = (Ce != C) & ~(np.isnan(Ce) & np.isnan(C))
            self.fail(rec, "engine-bitwise", diff, Ce, C)
        return mask

    def native(self) -> dict:
        with np.errstate(over="ignore", invalid="ignore"):
            C = self.A @ self.B
        out = summarize(self.ref, self.ref.errors(C)[0])
        special = self.ref.special(C)
        out["special"] = {name: int(special[name].sum()) for name in SPECIAL_CHECKS}
        return out


def run_case(case: Case, update=None) -> dict:
    cr = CaseRun(case)
    t0 = time.perf_counter()
    for scheme in SCHEMES:
        for mode in MODES:
            for count in counts_for(case, scheme):
                cr.run(scheme, mode, count, update)
    c = case
    ref = cr.ref
    return {"name": c.name, "family": c.family, "m": c.m, "n": c.n, "k": c.k,
            "phi": c.phi, "phi_label": c.phi_label, "params": c.params,
            "reference": {"kind": ref.kind, "seconds": cr.ref_seconds,
                          "overflow_entries": int(ref.overflow.sum()),
                          "guard_entries": int(ref.guard.sum()),
                          "subnormal_entries": int(((ref.S != 0) & (np.abs(ref.S) < 2.0 ** -1022))
                                                   .sum()),
                          **ref.checks},
            "native": cr.native(), "runs": cr.runs, "failures": cr.failures,
            "known_issues": cr.known, "seconds": time.perf_counter() - t0}
