"""Run the ``fft`` package and ``scipy.fft`` (float64) on every case; measure, check.

Metrics, against the long-double reference ``r`` (``x`` itself for the round trip):
``rel_l2`` = ``||y - r||_2 / ||r||_2`` and ``max`` = ``max |y - r| / max |r|``.

Failures (the exit status):

* ``vs-scipy-l2``, ``vs-scipy-max``: ours above scipy.fft's (float64) on the same
  input, in either metric;
* ``bound``: ours' ``rel_l2`` above ``2 u sqrt(log2 N)`` (``4 u sqrt(log2 N)`` when a
  length has a prime factor above :data:`fft.DENSE_LIMIT`, i.e. Bluestein), with
  ``N`` the number of points transformed and ``u = 2**-53``;
* ``nonfinite``: a NaN or an infinity in ours; ``signature``: a shape or dtype other
  than scipy's;
* ``reference``: the long-double reference off the direct mpmath DFT: by more than
  :data:`~validation.fft.reference.AGREEMENT_LIMIT` (relative) on the small checks'
  every output, or, at the few bins checked on a 1-D case, by more than
  :data:`~validation.fft.reference.SPOT_FRACTION` of the case's bound (relative to the
  output's root mean square), so that it cannot move a measured error by more.

A failure that matches :data:`KNOWN_ISSUES` (an ``fft`` bug already reported) is
recorded apart and does not set the exit status.
"""

from __future__ import annotations

import math
import time

import numpy as np
import scipy.fft as sfft

import fft

from . import reference as refmod
from .cases import Case, build

U = 2.0 ** -53
BLUESTEIN_FACTOR = 2  # the bound's factor for Bluestein lengths (4u instead of 2u)

#: Reported ``fft`` bugs: a failure matching every key but ``issue`` is "known". None now.
KNOWN_ISSUES: tuple[dict, ...] = ()


def bluestein(shape) -> bool:
    """Whether a length of ``shape`` has a prime factor beyond :data:`fft.DENSE_LIMIT`."""
    return any(r > fft.DENSE_LIMIT for n in shape for r in fft.factorize(int(n)))


def bound(shape) -> float:
    """``2 u sqrt(log2 N)``, doubled for Bluestein lengths."""
    n = math.prod(shape)
    return (BLUESTEIN_FACTOR if bluestein(shape) else 1) * 2 * U * math.sqrt(math.log2(n))


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
           "shape": list(c.shape), "size": c.size, "bluestein": bluestein(c.shape),
           "bound": bound(c.shape), "seconds": {}}
    t0 = time.perf_counter()
    ref = refmod.long_double(c.transform, x, c.shape)
    rec["seconds"]["reference"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    with np.errstate(all="ignore"):
        ours = refmod.call(fft, c.transform, x, c.shape)
    rec["seconds"]["ours"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    theirs = refmod.call(sfft, c.transform, x, c.shape)
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
    rec["reference"] = _spot(c, x, ref)
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
    bins = refmod.spot_bins(c.shape[0], c.transform)
    exact = refmod.direct_dft(c.transform, x, c.shape, bins)
    got = refmod.agreement(ref, exact, bins)
    return {"kind": "long double", "spot": got["rel_rms"], "bins": bins}


def reference_checks(update=None) -> list[dict]:
    """The long-double reference against mpmath's direct DFT, every output, small sizes."""
    out = []
    for transform, shape in refmod.SMALL_CHECKS:
        c = Case(transform, "normal", shape)
        x = build(c)
        ref = refmod.long_double(transform, x, shape)
        got = refmod.agreement(ref, refmod.direct_dft(transform, x, shape))
        got.update({"transform": transform, "shape": list(shape),
                    "ok": got["rel_l2"] <= refmod.AGREEMENT_LIMIT
                    and got["rel_rms"] <= refmod.AGREEMENT_LIMIT})
        out.append(got)
        if update:
            update(1)
    return out


def reference_failures(checks: list[dict]) -> list[dict]:
    return [_failure(f"check-{r['transform']}-{'x'.join(map(str, r['shape']))}", "reference",
                     max(r["rel_l2"], r["rel_rms"]), refmod.AGREEMENT_LIMIT,
                     "long double vs mpmath, every output")
            for r in checks if not r["ok"]]
