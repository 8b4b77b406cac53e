"""Run the ``fft`` package and ``scipy.fft`` (float64) on every case; measure, check.

Metrics, against the long-double reference ``r`` (``x`` itself for the round trip):
``rel_l2`` = ``||y - r||_2 / ||r||_2`` and ``max`` = ``max |y - r| / max |r|``.

Failures (the exit status):

* ``vs-scipy-l2``, ``vs-scipy-max``: ours above scipy.fft's (float64) on the same
  input, in either metric;
* ``bound``: ours' ``rel_l2`` above ``2 u sqrt(log2 N)`` (``4 u sqrt(log2 N)`` when a
  length has a prime factor above :data:`fft.DENSE_LIMIT`, i.e. Bluestein), with
  ``N`` the number of points transformed and ``u = 2**-53``; for a DCT/DST, ``N`` is
  the length of its symmetric extension and Bluestein refers to the FFTs the ``fft``
  package takes for it (:func:`validation.fft.r2r.bound`);
* ``nonfinite``: a NaN or an infinity in ours; ``signature``: a shape or dtype other
  than scipy's;
* ``reference``: the long-double reference off the direct mpmath DFT: by more than
  :data:`~validation.fft.reference.AGREEMENT_LIMIT` (relative) on the small checks'
  every output, or, at the few bins checked on a 1-D case, by more than
  :data:`~validation.fft.reference.SPOT_FRACTION` of the case's bound (relative to the
  output's root mean square), so that it cannot move a measured error by more;
* ``r2r-median``: in the quick and full tiers, the median over the DCT/DST cases of
  ours' ``rel_l2`` over scipy's above :data:`R2R_MEDIAN_GOAL` (the issue's goal: at most
  scipy's on every case, ``vs-scipy-l2``, and 0.7 times it in the median;
  :func:`r2r_summary` gives it per type).

A failure that matches :data:`KNOWN_ISSUES` (an ``fft`` bug already reported) is
recorded apart and does not set the exit status.
"""

from __future__ import annotations

import math
import time

import numpy as np
import scipy.fft as sfft

import fft

from . import r2r
from . import reference as refmod
from .cases import Case, build

U = 2.0 ** -53
BLUESTEIN_FACTOR = 2  # the bound's factor for Bluestein lengths (4u instead of 2u)

#: Reported ``fft`` bugs: a failure matching every key but ``issue`` is "known". None now.
KNOWN_ISSUES: tuple[dict, ...] = ()
#: The DCT/DST's goal: the median of ours' relative L2 error over scipy's, at most this
R2R_MEDIAN_GOAL = 0.7


def bluestein(shape) -> bool:
    """Whether a length of ``shape`` has a prime factor beyond :data:`fft.DENSE_LIMIT`."""
    return any(r > fft.DENSE_LIMIT for n in shape for r in fft.factorize(int(n)))


def bound(shape) -> float:
    """``2 u sqrt(log2 N)``, doubled for Bluestein lengths."""
    n = math.prod(shape)
    return (BLUESTEIN_FACTOR if bluestein(shape) else 1) * 2 * U * math.sqrt(math.log2(n))


def case_bluestein(c: Case) -> bool:
    """:func:`bluestein` of the case's FFTs (a DCT/DST's: :func:`validation.fft.r2r.bluestein`)."""
    return r2r.bluestein(c.transform, c.type, c.shape) if c.r2r else bluestein(c.shape)


def case_bound(c: Case) -> float:
    """:func:`bound`, or for a DCT/DST :func:`validation.fft.r2r.bound`."""
    return r2r.bound(c.transform, c.type, c.shape, U) if c.r2r else bound(c.shape)


def errors(y: np.ndarray, ref: np.ndarray) -> dict:
    """``rel_l2`` and ``max`` of ``y`` against ``ref`` (computed in long double)."""
    d = np.abs(y.astype(ref.dtype) - ref).reshape(-1)
    a = np.abs(ref).reshape(-1)
    num, den = float(np.sqrt(np.sum(d * d))), float(np.sqrt(np.sum(a * a)))
    top = float(a.max()) if a.size else 0.0
    ratio = (lambda p, q: p / q if q else (0.0 if p == 0 else math.inf))
    return {"rel_l2": ratio(num, den), "max": ratio(float(d.max()) if d.size else 0.0, top)}


def known_issue(failure: dict) -> str | None:
    for known in KNOWN_ISSUES:
        if all(failure.get(k) == v for k, v in known.items() if k != "issue"):
            return known["issue"]
    return None


def _failure(case: str, check: str, measured, limit, note: str = "") -> dict:
    return {"case": case, "check": check, "measured": float(measured), "limit": float(limit),
            "note": note}


def run_case(c: Case) -> dict:
    """Ours, scipy's and the reference on one case; the record, failures included."""
    x = build(c)
    rec = {"name": c.name, "transform": c.transform, "family": c.family,
           "shape": list(c.shape), "size": c.size, "bluestein": case_bluestein(c),
           "bound": case_bound(c), "seconds": {}}
    if c.r2r:
        rec.update({"r2r": True, "type": c.type, "norm": c.norm or "backward",
                    "reductions": r2r.reductions(c.transform, c.type, c.shape)})
    t0 = time.perf_counter()
    ref = refmod.long_double(c.transform, x, c.shape, **c.options)
    rec["seconds"]["reference"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    with np.errstate(all="ignore"):
        ours = refmod.call(fft, c.transform, x, c.shape, **c.options)
    rec["seconds"]["ours"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    theirs = refmod.call(sfft, c.transform, x, c.shape, **c.options)
    rec["seconds"]["scipy"] = time.perf_counter() - t0
    fails = []
    if ours.shape != theirs.shape or ours.dtype != theirs.dtype:
        fails.append(_failure(c.name, "signature", 0, 0,
                              f"ours {ours.shape} {ours.dtype}, scipy {theirs.shape} "
                              f"{theirs.dtype}"))
        ours = np.broadcast_to(np.full(1, np.nan, theirs.dtype), theirs.shape)
    bad = int(np.count_nonzero(~np.isfinite(ours)))
    if bad:
        fails.append(_failure(c.name, "nonfinite", bad, 0, "entries"))
    rec["ours"], rec["scipy"] = errors(ours, ref), errors(theirs, ref)
    o, s = rec["ours"], rec["scipy"]
    for m, check in (("rel_l2", "vs-scipy-l2"), ("max", "vs-scipy-max")):
        if not o[m] <= s[m]:
            fails.append(_failure(c.name, check, o[m], s[m]))
    if not o["rel_l2"] <= rec["bound"]:
        fails.append(_failure(c.name, "bound", o["rel_l2"], rec["bound"]))
    rec["goals"] = {"vs_scipy": o["rel_l2"] <= s["rel_l2"] and o["max"] <= s["max"],
                    "bound": o["rel_l2"] <= rec["bound"]}
    t0 = time.perf_counter()
    rec["reference"] = _spot(c, x, ref)
    rec["seconds"]["spot"] = time.perf_counter() - t0
    if rec["reference"]["kind"] == "long double" and rec["reference"]["spot"] is not None:
        spot, limit = rec["reference"]["spot"], refmod.SPOT_FRACTION * rec["bound"]
        if not spot <= limit:
            fails.append(_failure(c.name, "reference", spot, limit,
                                  "long double vs mpmath at bins "
                                  f"{rec['reference']['bins']}"))
    rec["failures"], rec["known_issues"] = [], []
    for f in fails:
        issue = known_issue(f)
        (rec["failures"] if issue is None else rec["known_issues"]).append(
            f if issue is None else {**f, "issue": issue})
    return rec


def _spot(c: Case, x, ref) -> dict:
    """The reference's own check on this case: a few bins summed directly in mpmath."""
    if c.transform == "roundtrip":
        return {"kind": "exact", "spot": None, "bins": []}
    if len(c.shape) > 1 or c.shape[0] > refmod.SPOT_LIMIT:
        return {"kind": "long double", "spot": None, "bins": []}
    if c.r2r:
        bins = r2r.spot_bins(c.shape[0])
        exact = r2r.direct(c.transform, c.type, c.norm, x, bins)
    else:
        bins = refmod.spot_bins(c.shape[0], c.transform)
        exact = refmod.direct_dft(c.transform, x, c.shape, bins)
    got = refmod.agreement(ref, exact, bins)
    return {"kind": "long double", "spot": got["rel_rms"], "bins": bins}


def reference_check_count() -> int:
    """How many checks :func:`reference_checks` makes (the FFTs' and the DCT/DST's)."""
    return len(refmod.SMALL_CHECKS) + len(r2r.SMALL_CHECKS)


def reference_checks(update=None) -> list[dict]:
    """The long-double reference against mpmath's direct sums, every output, small sizes:
    the DFTs (:data:`validation.fft.reference.SMALL_CHECKS`), then the DCT/DST
    (:data:`validation.fft.r2r.SMALL_CHECKS`, each under every norm: the worst)."""
    out = []
    for transform, shape in refmod.SMALL_CHECKS:
        c = Case(transform, "normal", shape)
        x = build(c)
        ref = refmod.long_double(transform, x, shape)
        got = refmod.agreement(ref, refmod.direct_dft(transform, x, shape))
        out.append(_checked(got, transform, shape))
        if update:
            update(1)
    for transform, t, shape in r2r.SMALL_CHECKS:
        x = build(Case(transform, "normal", shape, type=t))
        per_norm = []
        for norm in r2r.NORMS:
            ref = refmod.long_double(transform, x, shape, type=t, norm=norm)
            got = refmod.agreement(ref, r2r.direct(transform, t, norm, x))
            per_norm.append(_checked(got, f"{transform}{t}", shape, norm=norm))
        bad = [r for r in per_norm if not r["ok"]]  # NaN included
        worst = bad[0] if bad else max(per_norm, key=lambda r: max(r["rel_l2"], r["rel_rms"]))
        out.append({**worst, "norms": list(r2r.NORMS)})
        if update:
            update(1)
    return out


def _checked(got: dict, transform: str, shape, **extra) -> dict:
    return {**got, "transform": transform, "shape": list(shape), **extra,
            "ok": got["rel_l2"] <= refmod.AGREEMENT_LIMIT
            and got["rel_rms"] <= refmod.AGREEMENT_LIMIT}


def reference_failures(checks: list[dict]) -> list[dict]:
    return [_failure(f"check-{r['transform']}-{'x'.join(map(str, r['shape']))}", "reference",
                     max(r["rel_l2"], r["rel_rms"]), refmod.AGREEMENT_LIMIT,
                     "long double vs mpmath, every output" + (
                         f", every norm (worst: {r['norm']})" if "norms" in r else ""))
            for r in checks if not r["ok"]]


# -- the DCT/DST's goal -----------------------------------------------------------------------

def _ratio(p: float, q: float) -> float | None:
    """``p / q``; ``None`` where both are 0 (exact), ``inf`` where only ``q`` is."""
    if q:
        return p / q
    return None if p == 0 else math.inf


def _stats(recs: list[dict]) -> dict:
    l2 = [r for r in (_ratio(c["ours"]["rel_l2"], c["scipy"]["rel_l2"]) for c in recs)
          if r is not None]
    mx = [r for r in (_ratio(c["ours"]["max"], c["scipy"]["max"]) for c in recs)
          if r is not None]
    med = (lambda v: float(np.median(v)) if v else None)
    return {"cases": len(recs), "l2_median": med(l2), "l2_max": max(l2, default=None),
            "max_median": med(mx), "max_max": max(mx, default=None),
            "above_l2": sum(not c["ours"]["rel_l2"] <= c["scipy"]["rel_l2"] for c in recs),
            "above_max": sum(not c["ours"]["max"] <= c["scipy"]["max"] for c in recs),
            "seconds": sum(sum(c["seconds"].values()) for c in recs)}


def r2r_summary(results: list[dict]) -> dict | None:
    """Ours' errors over scipy's on the DCT/DST cases (``None`` if there are none).

    ``groups``: one per kind and type as called (``dct``, ``idct``, ``dctn``,
    ``idctn`` of type 2 are "DCT-2"), each with the number of cases, the median and
    largest ratio of the relative L2 errors (``l2_``) and of the max errors
    (``max_``; cases where both are 0 left out), how many are above scipy's in
    each, and the seconds they took (reference, ours, scipy's, spot check);
    ``all``: the same over every case; ``ok``: the goal (every L2 ratio at most 1,
    the median at most :data:`R2R_MEDIAN_GOAL`).
    """
    recs = [c for c in results if c.get("r2r")]
    if not recs:
        return None
    groups = []
    for k in r2r.KINDS:
        for t in r2r.TYPES:
            sel = [c for c in recs if r2r.kind(c["transform"]) == k and c["type"] == t]
            if sel:
                groups.append({"label": f"{k.upper()}-{t}", "kind": k, "type": t,
                               **_stats(sel)})
    whole = _stats(recs)
    ok = whole["above_l2"] == 0 and (whole["l2_median"] or 0.0) <= R2R_MEDIAN_GOAL
    return {"groups": groups, "all": whole, "goal_median": R2R_MEDIAN_GOAL, "ok": ok}


def tier_failures(results: list[dict], tier: str) -> list[dict]:
    """``r2r-median`` (quick and full tiers only: a selection's median proves nothing)."""
    s = r2r_summary(results)
    if tier not in ("quick", "full") or s is None or s["all"]["l2_median"] is None:
        return []
    med = s["all"]["l2_median"]
    if med <= R2R_MEDIAN_GOAL:
        return []
    return [_failure("r2r (all)", "r2r-median", med, R2R_MEDIAN_GOAL,
                     f"median of ours' rel L2 error over scipy's, {s['all']['cases']} cases")]
