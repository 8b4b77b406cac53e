"""The HPL model of :mod:`tme_model.hpl_network` against measured runs of ``benchmarks/mpi/hpl.py``.

:func:`check_runs` prices each run with :func:`~tme_model.hpl_network.hpl_time` and
compares time (per run and per phase) and traffic with the measured ones; ``python -m
tme_model.hpl_check --check out.json`` (or ``python -m tme_model.hpl_network --check
out.json``) prints the tables, the network from ``benchmarks.mpi.network``'s
calibration (``--network network.json``) or ``--alpha``/``--beta``.

**The terms, and what is measured.**  The inputs are measurements of this machine: the
calibration profile (``tme-calibrate``, idle, all threads), the network's ping-pong, and
what ``benchmarks/mpi/hpl.py`` measures on the run's grid in the same job
(:mod:`benchmarks.mpi.hpl_probe`, in each record); none is fitted to the runs' times, and
one figure is ozaki's own (:data:`SMALL_S_PER_TERM`).  Per panel ``k``, on the critical
path (:func:`~tme_model.hpl_network.hpl_time`):

1. **panel**: ``panel_probe`` (:class:`StepCosts`), ``factor_panel`` timed on the grid's
   process columns for the first and last full-width panels; panel ``k`` costs the line
   ``a + b R`` through them in its tallest rank's rows ``R``, which holds the panel
   code's real rate, its per-column Python/mpi4py cost (``step_overhead_s = a / nb``)
   and the all-gathers;
2. **broadcasts** (panel, pivots, ``U12``): ``alpha + bytes / beta`` per message, flat;
3. **interchanges**: ``interchange_probe``, ``move_rows`` timed on a first panel's
   uniform pivots: bytes per second, at which panel ``k`` moves the model's expected
   ``16 (rows moved) (columns)`` bytes;
4. **triangular** (``U12``): the profile's FP64 vector rate or its streaming bandwidth;
5. **updates**: the profile's GEMM (native) or Ozaki-II phases (emulated,
   :meth:`~tme_model.profile.Profile.predict_gemm`) over the slowest rank's rate for
   each kind of work (``rank_rates``: :func:`benchmarks.mpi.probe.rank_rates` on each
   rank's first update block, all ranks at once), plus the pass ``C - X`` (24 bytes an
   entry) at the measured streaming rate; updates of at most :data:`SMALL_WORK` terms
   at :data:`SMALL_S_PER_TERM`; the decisions' reductions as the record counted them.

The solve adds per block column and direction its contiguous copy (a pass), broadcasts
and block update.  Without the probes the panel and interchanges are the profile's
(``--rates``/``--speed`` stand for ``rank_rates``).  Not modelled: the calls' argument
checks and working copy, and the first touch of new memory (the first update's
product), seen as measured ``other`` and ``updates`` above the prediction.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from pathlib import Path

from .hpl_network import PHASES, hpl_time, hpl_traffic, solve_traffic
from .lu_projection import PANEL_MODELS
from .network import BCASTS, Network, RankRates
from .specs import TMEError

__all__ = ["SMALL_S_PER_TERM", "SMALL_WORK", "ProfileMachine", "StepCosts", "check_runs",
           "check_table", "main"]

#: ``ozaki``'s small-product threshold (``m n k`` terms of the whole update): below it,
#: with ``num_moduli="auto"``, an update takes the compensated path, not the emulation.
SMALL_WORK = 2 ** 24
#: Seconds per term of that path, one thread: ``ozaki``'s own figure (``2**24`` terms
#: in about 5 ms, :mod:`ozaki.core.compensated`), a rough constant, not a calibration.
SMALL_S_PER_TERM = 5e-3 / 2 ** 24


@dataclass(frozen=True)
class StepCosts:
    """The panel and interchange steps as measured on a run's grid (``hpl_time``'s ``steps``).

    Attributes
    ----------
    width : int
        The probed panels' width (the run's ``nb``, or ``n`` when smaller).
    rows : tuple of int
        The tallest rank's rows in the probed panels: the first (``k = 0``), then the
        last of full width (absent when the run has one).
    seconds : tuple of float
        Their measured seconds (the slowest rank's).
    interchange_bytes : float
        Bytes the busiest rank wrote and read in the probed interchanges (8 per column of
        each row).
    interchange_seconds : float
        Their measured seconds.
    """

    width: int
    rows: tuple
    seconds: tuple
    interchange_bytes: float
    interchange_seconds: float

    def __post_init__(self):
        positive = (*self.seconds, self.interchange_bytes, self.interchange_seconds)
        if not (isinstance(self.width, int) and self.width >= 1 and all(
                isinstance(r, int) and r >= 0 for r in self.rows) and len(self.rows) == len(
                self.seconds) in (1, 2) and all(math.isfinite(x) and x > 0 for x in positive)):
            raise TMEError(f"StepCosts needs a positive int width, one or two rows >= 0 with "
                           f"their seconds, and seconds and bytes > 0, got {self!r}")

    @classmethod
    def from_record(cls, rec: dict) -> "StepCosts | None":
        """From a record's ``panel_probe`` and ``interchange_probe``; ``None`` without them."""
        pp, ip = rec.get("panel_probe"), rec.get("interchange_probe")
        if not pp or not ip:
            return None
        try:
            return cls(int(pp["width"]), tuple(int(r) for r in pp["rows"]),
                       tuple(float(t) for t in pp["seconds"]), float(ip["bytes"]),
                       float(ip["seconds"]))
        except (KeyError, TypeError, ValueError) as exc:
            raise TMEError(f"a record's panel_probe and interchange_probe need width, rows, "
                           f"seconds and bytes, seconds ({exc!r})") from None

    @property
    def line(self) -> tuple[float, float]:
        """``(a, b)``: a full-width panel costs ``a + b R`` seconds, ``R`` its tallest rank's
        rows (through the two measured panels; through the origin with one)."""
        (r0, *r1), (t0, *t1) = self.rows, self.seconds
        if r1 and r1[0] != r0:
            b = (t0 - t1[0]) / (r0 - r1[0])
            return t0 - b * r0, b
        return (0.0, t0 / r0) if r0 else (t0, 0.0)

    def panel_s(self, rows: int, w: int) -> float:
        """A panel of ``w`` columns whose tallest rank holds ``rows`` rows: ``a w / width +
        b rows (w / width)^2`` (the fixed cost per column, the row work per column and per
        column updated), at least 0."""
        a, b = self.line
        f = w / self.width
        return max(0.0, a * f + b * rows * f * f)

    def summary(self) -> dict:
        """``step_overhead_s``: the panel's fixed cost per column, ``a / width`` (Python,
        mpi4py, the all-gather); ``panel_row_s``: ``b``; ``interchange_gbps``."""
        return {"step_overhead_s": self.line[0] / self.width, "panel_row_s": self.line[1],
                "interchange_gbps": self.interchange_bytes / self.interchange_seconds / 1e9}

    def interchange_s(self, nbytes: float) -> float:
        """Interchanges moving ``nbytes`` on the busiest rank, at the probe's bytes per second."""
        return nbytes * self.interchange_seconds / self.interchange_bytes


@dataclass(frozen=True)
class ProfileMachine:
    """One rank of a CPU run: local times from a calibration profile over the rank's rates.

    Attributes
    ----------
    profile : tme_model.profile.Profile
    rates : RankRates or float
        The rank's rates relative to the profile (``benchmarks.mpi.probe``).
    scheme, moduli, mode, engine
        Of the emulated updates (``moduli``: ``info.num_moduli``; ``engine``: the
        profile's best by default).
    small_products : bool
        Whether updates of at most :data:`SMALL_WORK` terms take ``ozaki``'s
        compensated path (``num_moduli="auto"``, the default), at
        :data:`SMALL_S_PER_TERM`.
    """

    profile: object
    rates: RankRates | float = 1.0
    scheme: str = "fp64"
    moduli: int = 6
    mode: str = "accurate"
    engine: str | None = None
    small_products: bool = True

    @property
    def _r(self) -> RankRates:
        return self.rates if isinstance(self.rates, RankRates) else RankRates.uniform(self.rates)

    def pass_s(self, nbytes: float) -> float:
        """A streaming pass of ``nbytes``, seconds."""
        return nbytes / (self.profile.mem_tbps * 1e12 * self._r.stream)

    def level2_s(self, flops: float, nbytes: float) -> float:
        """Loop code (panel, triangular solves): vector rate or traffic, the slower."""
        return max(flops / (self.profile.fp64_vector_tflops * 1e12), self.pass_s(nbytes))

    def trsm_s(self, w: int, cols: int) -> float:
        """``L11^-1`` (``w x w``, unit) applied to ``w x cols``, seconds."""
        return self.level2_s(cols * w * (w - 1), 8.0 * (w * w / 2 + 2 * w * cols))

    def update_s(self, m: int, n: int, w: int, emulated: bool, whole: tuple) -> float:
        """``C - L U`` on an ``m x w x n`` block of a ``whole`` ``(M, N, w)`` update."""
        if not (m and n and w):
            return 0.0
        r, sub = self._r, self.pass_s(24.0 * m * n)  # the difference C - X
        if not emulated:
            return self.profile.native_gemm_s(m, n, w) / r.gemm + sub
        if self.small_products and math.prod(whole) <= SMALL_WORK:
            return m * n * w * SMALL_S_PER_TERM
        t = self.profile.predict_gemm(self.scheme, self.moduli, self.mode, m, n, w,
                                      engine=self.engine)
        return (t.gemm_s / r.products + t.scale_s / r.scaling + t.residue_s / r.residues
                + t.recon_s / r.reconstruction + t.fixed_s / r.passes + sub)


def _merge(*dicts) -> dict:
    out: dict = {}
    for d in dicts:
        for kind, (b, m) in d.items():
            have = out.get(kind, (0, 0))
            out[kind] = (have[0] + b, have[1] + m)
    return out


def _run_options(meta: dict) -> dict:
    """scheme, mode and an explicit moduli count from a record's ``meta["ozaki"]``
    (``str(ozaki.resolve_options())``), where it says them."""
    text = str(meta.get("ozaki", ""))
    got = {k: m.group(1) for k in ("scheme", "mode")
           if (m := re.search(rf"{k}='(\w+)'", text))}
    if m := re.search(r"num_moduli=(\d+)", text):
        got["moduli"] = int(m.group(1))
    return got


def _rates(rec: dict, rates) -> RankRates | float:
    """The record's own ``rank_rates`` (the slowest rank's rate of each kind), else ``rates``."""
    per = rec.get("rank_rates")
    if not per:
        return rates
    return RankRates(**{f: min(float(r[f]) for r in per) for f in RankRates.__dataclass_fields__})


def check_runs(doc, profile, net: Network, *, rates: RankRates | float = 1.0,
               scheme: str | None = None, moduli: int | None = None, mode: str | None = None,
               engine: str | None = None, bcast: str = "flat", panel: str = "cached",
               target: float = 0.25) -> list[dict]:
    """The model against measured runs of ``benchmarks/mpi/hpl.py``.

    Parameters
    ----------
    doc : dict or list of dict
        The benchmark's JSON (``{"meta", "runs"}``) or its runs. A run needs ``kind``,
        ``n``, ``nb``, ``grid`` (``"PxQ"``), ``seconds``; ``factor_seconds``,
        ``phases``, ``traffic_rank0``, ``traffic_max`` (``{kind: [bytes, messages]}``,
        factorisation and solve), ``rank_rates``, ``panel_probe`` and
        ``interchange_probe`` (module docstring) are used where present.
    profile : tme_model.profile.Profile
        The calibration of the machine (one rank's local times: :class:`ProfileMachine`).
    net : Network
        Alpha and beta (``benchmarks.mpi.network``'s ping-pong, or given).
    rates : RankRates or float
        The ranks' rates against the profile, for runs without ``rank_rates``.
    scheme, moduli, mode, engine
        The emulated updates' (default: from ``meta["ozaki"]``, else ``fp64``,
        ``ozaki.auto_num_moduli(scheme, nb)``, ``accurate``, the profile's best engine).
    bcast, panel : str
        The broadcasts' algorithm and the panel's traffic in the model (``"cached"``: a
        CPU's caches hold a rank's ``m_p x nb`` panel at the sizes a CPU runs).
    target : float
        The tolerance on ``predicted / measured - 1`` (the issue's: 25%).

    Returns
    -------
    list of dict
        Per run: ``measured_s``, ``predicted_s``, ``ratio`` (predicted / measured),
        ``within_target``, the same for the factorisation (``factor_*``);
        ``phases_measured`` (the record's, max over ranks, ``communication`` with the
        interchanges and waiting), ``phases_predicted`` (factorisation plus solve);
        ``traffic`` (per kind, modelled and counted ``[bytes, messages]``, rank 0's and
        the most over ranks), ``traffic_exact`` (whether the exactly modelled counts --
        ``panels``, ``pivots``, ``rhs``, the interchanges' messages -- are the counted);
        ``inputs``: ``rank_rates`` (the slowest rank's) and :meth:`StepCosts.summary`,
        ``None`` where the record has no probes.
    """
    meta, runs = (doc.get("meta", {}), doc.get("runs")) if isinstance(doc, dict) else ({}, doc)
    if not isinstance(runs, list) or not runs:
        raise TMEError("doc must be benchmarks/mpi/hpl.py's JSON (a 'runs' list) or its runs")
    given = _run_options(meta)
    out = []
    for i, rec in enumerate(runs):
        try:
            kind, n, nb = rec["kind"], int(rec["n"]), int(rec["nb"])
            measured = float(rec["seconds"])
            P, Q = (int(v) for v in str(rec["grid"]).lower().split("x"))
        except (KeyError, ValueError, TypeError) as exc:
            raise TMEError(f"run {i}: needs kind, n, nb, grid 'PxQ' and seconds "
                           f"({exc!r})") from None
        sch = scheme or given.get("scheme", "fp64")
        if moduli is not None or "moduli" in given:
            count = moduli if moduli is not None else given["moduli"]
        else:
            from ozaki import auto_num_moduli
            count = auto_num_moduli(sch, nb)
        machine = ProfileMachine(profile, _rates(rec, rates), sch, count,
                                 mode or given.get("mode", "accurate"), engine,
                                 bool(meta.get("small_products", True)))
        seen_max = rec.get("traffic_max", {})
        steps = StepCosts.from_record(rec)
        t = hpl_time(n, nb, P, Q, machine, net, emulated=kind == "emulated", bcast=bcast,
                     panel=panel, decisions=tuple(seen_max.get("decisions", (0, 0))),
                     steps=steps)
        traffic, exact = _traffic(n, nb, P, Q, rec.get("traffic_rank0", {}), seen_max)
        ratio = t["total_s"] / measured
        fs = rec.get("factor_seconds")
        both = {k: t["phases"][k] + t["solve_phases"][k] for k in PHASES}
        out.append({"kind": kind, "n": n, "nb": nb, "grid": f"{P}x{Q}",
                    "oversubscribed": bool(rec.get("oversubscribed", False)),
                    "measured_s": measured, "predicted_s": t["total_s"], "ratio": ratio,
                    "within_target": abs(ratio - 1) <= target,
                    "factor_measured_s": fs, "factor_predicted_s": t["factor_s"],
                    "factor_ratio": None if not fs else t["factor_s"] / float(fs),
                    "phases_measured": rec.get("phases", {}), "phases_predicted": both,
                    "predicted_communication_s": t["communication_s"],
                    "traffic": traffic, "traffic_exact": exact, "scheme": sch, "moduli": count,
                    "inputs": {"rank_rates": vars(machine.rates) if rec.get("rank_rates")
                               else None, **(steps.summary() if steps else dict.fromkeys(
                                   ("step_overhead_s", "panel_row_s", "interchange_gbps")))}})
    return out


def _traffic(n: int, nb: int, P: int, Q: int, seen0: dict, seen_max: dict):
    """Per kind, the modelled and the counted ``[bytes, messages]`` (rank 0's, the most
    over ranks), and whether the exactly modelled ones agree (``None``: nothing counted)."""
    per_rank = [_merge(hpl_traffic(n, nb, P, Q, p, q), solve_traffic(n, nb, P, Q, p, q))
                for p in range(P) for q in range(Q)]
    traffic, exact = {}, True
    for k in ("panels", "pivots", "rhs", "interchanges"):
        num = float if k == "interchanges" else int  # its bytes are an expectation
        pred0 = [num(per_rank[0].get(k, (0, 0))[0]), int(per_rank[0].get(k, (0, 0))[1])]
        predm = [num(max(r.get(k, (0, 0))[0] for r in per_rank)),
                 int(max(r.get(k, (0, 0))[1] for r in per_rank))]
        got0, gotm = list(seen0.get(k, [0, 0])), list(seen_max.get(k, [0, 0]))
        traffic[k] = {"predicted_rank0": pred0, "measured_rank0": got0,
                      "predicted_max": predm, "measured_max": gotm}
        j = 1 if k == "interchanges" else 0
        exact = exact and pred0[j:] == got0[j:] and predm[j:] == gotm[j:]
    return traffic, (exact if (seen0 or seen_max) else None)


def check_table(rows: list[dict]) -> str:
    """:func:`check_runs`' rows as Markdown: per run, then per phase."""
    out = ["| kind | n | nb | grid | measured s | predicted s | predicted/measured | within | "
           "factor pred/meas | traffic exact | step overhead us | panel us/row | "
           "interchanges GB/s |", "|" + "---|" * 13]
    for r in rows:
        fr = "-" if r["factor_ratio"] is None else f"{r['factor_ratio']:.2f}"
        got = r["inputs"]
        probes = ("- | - | -" if got["step_overhead_s"] is None else
                  f"{got['step_overhead_s'] * 1e6:.3g} | {got['panel_row_s'] * 1e6:.3g} | "
                  f"{got['interchange_gbps']:.3g}")
        out.append(f"| {r['kind']} | {r['n']} | {r['nb']} | {r['grid']}"
                   f"{' (oversubscribed)' if r['oversubscribed'] else ''} | "
                   f"{r['measured_s']:.4g} | {r['predicted_s']:.4g} | {r['ratio']:.2f} | "
                   f"{'yes' if r['within_target'] else 'NO'} | {fr} | {r['traffic_exact']} | "
                   f"{probes} |")
    out += ["", "Phases, seconds, measured / predicted (measured: the most any rank spent, "
            "communication with the interchanges and the waiting; predicted: on the critical "
            "path, factorisation plus solve)", "", "| kind | grid | panel | triangular | "
            "updates | other | communication / broadcasts + interchanges |", "|" + "---|" * 7]
    for r in rows:
        m, p = r["phases_measured"], r["phases_predicted"]
        pairs = [(m.get(k, math.nan), p[k]) for k in ("panel", "triangular", "updates", "other")]
        pairs.append((m.get("communication", math.nan), p["broadcasts"] + p["interchanges"]))
        out.append(f"| {r['kind']} | {r['grid']} | "
                   + " | ".join(f"{x:.3g} / {y:.3g}" for x, y in pairs) + " |")
    return "\n".join(out)


def main(argv=None, prog: str = "python -m tme_model.hpl_check") -> int:
    """``python -m tme_model.hpl_check --check FILE``: :func:`check_runs`' tables."""
    import argparse

    from .network import load_network
    from .profile_file import load_profile

    p = argparse.ArgumentParser(prog=prog, description="The distributed HPL model against "
                                "measured runs of benchmarks/mpi/hpl.py.")
    p.add_argument("--check", metavar="JSON", required=True, help="benchmarks/mpi/hpl.py's JSON")
    p.add_argument("--network", default="network.json", help="benchmarks.mpi.network's JSON "
                   "or a key of data/networks.toml (default: network.json)")
    p.add_argument("--alpha", type=float, help="latency, s (with --beta, instead of --network)")
    p.add_argument("--beta", type=float, help="bandwidth, bytes/s")
    p.add_argument("--profile", default=str(Path(__file__).resolve().parents[1] / "docs"
                                            / "_generated" / "tme_profile.json"))
    p.add_argument("--rates", help="JSON of RankRates' fields (or a probe's {'rates': ...}) "
                                   "for runs without rank_rates; default --speed")
    p.add_argument("--speed", type=float, default=1.0,
                   help="every rate against the profile, for runs without rank_rates (default 1)")
    for flag, kw in (("--scheme", {}), ("--moduli", {"type": int}), ("--engine", {}),
                     ("--mode", {"choices": ("fast", "accurate")})):
        p.add_argument(flag, **kw)
    p.add_argument("--bcast", choices=BCASTS, default="flat", help="broadcasts (default flat)")
    p.add_argument("--panel", choices=PANEL_MODELS, default="cached",
                   help="the modelled panel's traffic (default cached)")
    p.add_argument("--format", choices=("markdown", "json"), default="markdown")
    a = p.parse_args(argv)
    if (a.alpha is None) != (a.beta is None):
        p.error("--alpha and --beta go together")
    try:
        net = (Network("given", "given alpha-beta", a.alpha, a.beta, "command line")
               if a.alpha is not None else load_network(a.network))
        rates = a.speed
        if a.rates:
            got = json.loads(Path(a.rates).read_text())
            rates = RankRates(**got.get("rates", got))
        doc = json.loads(Path(a.check).read_text())
        rows = check_runs(doc, load_profile(a.profile), net, rates=rates, scheme=a.scheme,
                          moduli=a.moduli, mode=a.mode, engine=a.engine, bcast=a.bcast,
                          panel=a.panel)
    except (TMEError, ValueError, OSError, json.JSONDecodeError) as exc:
        p.error(str(exc))
    print(json.dumps(rows, indent=1) if a.format == "json" else
          f"MODELLED against MEASURED ({a.check}; network {net.name}: alpha "
          f"{net.alpha_s * 1e6:.3g} us, beta {net.beta_bps / 1e9:.3g} GB/s)\n\n"
          + check_table(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
