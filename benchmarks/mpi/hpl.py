"""Distributed HPL benchmark: ``ozaki.distributed.lu_factor`` / ``lu_solve`` beside native FP64.

``mpiexec -n 4 python -m benchmarks.mpi.hpl --n 2048 --nb 128 --grid 2x2 --json out.json``
solves HPL's problem on one grid twice: ``emulated`` (:func:`ozaki.distributed.lu_factor`
then :func:`ozaki.distributed.lu_solve`: serial ``ozaki.linalg``'s bits) and ``native``
(:func:`ozaki.distributed.lu.native_lu_factor` / ``native_lu_solve``: the same block-cyclic
layout, panels and messages, the updates by the BLAS). ``--sweep strong`` (fixed ``n``) or
``--sweep weak`` (``n r^(1/3)`` rounded to a multiple of ``nb``, at least ``nb``: the same
flops per rank) runs both on 1, 2, 4 ranks (sub-communicators of ``COMM_WORLD``, the
default grid of each size: 1x1, 1x2, 2x2), with a progress bar (tqdm, rank 0), and
``--plot FILE`` draws time and parallel efficiency against ranks (rank 0). One thread
per rank (BLAS and numba).

The problem is HPL's generator style as :func:`benchmarks.hpl.hpl_problem` builds it on
rank 0: ``numpy.random.default_rng(seed)``, ``A = U(n, n) - 0.5`` then ``b = U(n) - 0.5``,
``U`` uniform on [0, 1), so every entry is uniform in [-0.5, 0.5) (``--seed``, default 0);
it is scattered with block size ``nb``, ``b`` as an ``(n, 1)`` matrix. Each case first
factors and solves a small problem (order ``min(n, 2 nb + 3)``) with both kinds on its
communicator, untimed (numba's compiled kernels loaded on every rank); each timed call
(``--repeats``, the fastest kept) has barriers around the factorisation and the solve.

Printed per run: HPL's lines (``T/V N NB P Q Time Gflops``, the scaled residual and
``PASSED``/``FAILED``), then the run's facts (``OVERSUBSCRIBED`` where it has more ranks
than usable cores: correctness, not speed). JSON (``--json``): ``meta`` (ranks, usable
cores, ``os.cpu_count()``, CPU and instruction set, ozaki's resolved options, the
parameters) and ``runs``, one record per run with:

``kind``
    ``emulated`` or ``native``.
``n, nb, grid, P, Q, ranks, cores, oversubscribed, seed``
    ``grid`` as ``"PxQ"``; ``cores``: usable cores (``os.sched_getaffinity``);
    ``oversubscribed``: ``ranks > cores``.
``seconds, factor_seconds, solve_seconds, samples_s``
    HPL's time ``seconds = factor_seconds + solve_seconds``, each the slowest rank's time
    of that call (barriers around it), of the fastest repeat; ``samples_s``: every
    repeat's ``seconds``.
``gflops``
    HPL's rate ``(2/3 n^3 + 3/2 n^2) / seconds / 1e9``.
``efficiency``
    ``gflops / (ranks gflops_1)`` with ``gflops_1`` the 1-rank run of the same kind in
    the same job: ``T1 / (r T_r)`` in a strong sweep (same ``n``), the flops-weighted
    form of it in a weak one; ``null`` when the job has no 1-rank run.
``residual, passed, norm_r, norm_a, norm_x, norm_b``
    HPL's check ``||A x - b||_oo / (eps (||A||_oo ||x||_oo + ||b||_oo) n)``,
    ``eps = 2^-53``, in FP64 on rank 0 (:func:`benchmarks.hpl.scaled_residual`);
    ``passed``: below 16.
``bitwise_vs_serial, differing_fraction_vs_serial``
    Against serial ``ozaki.linalg.lu_factor(A, block_size=nb)`` and ``lu_solve``
    (rank 0, in the same job): ``bitwise_vs_serial`` is whether the gathered ``lu``,
    ``piv`` and ``x`` have serial's bits (emulated: must be true; native: ``null``, its
    bits follow the BLAS and the grid); ``differing_fraction_vs_serial``: the share of
    the entries of ``lu`` and ``x`` whose bits differ (emulated 0; native: informative).
``phases, communication_share``
    The largest time any rank spent in each phase of ``info.seconds`` (factorisation
    plus solve): ``panel``, ``triangular``, ``updates`` (the products, with the
    reductions of their decisions), ``other`` (checks, copies, interchanges' packing),
    ``communication`` (broadcasts, the interchanges' and right-hand sides' exchanges,
    waiting included); ``communication_share = phases["communication"] / seconds``.
``products``
    Rank 0's products: ``total``, ``emulated`` (Ozaki Scheme II), ``compensated`` (the
    small-product path; ``--no-small-products`` sends every product to the emulation).
``bytes_sent, messages_sent, traffic_rank0, traffic_max``
    What each rank sent (``info.traffic`` of both calls, flat-collective convention:
    exact counts), as per-rank totals, and per kind (``panels``, ``pivots``,
    ``interchanges``, ``rhs``, ``decisions``) as ``[bytes, messages]``: rank 0's, and the
    largest over ranks (bytes and messages maximised apart).
``rank_rates, panel_probe, interchange_probe``
    The measured inputs ``python -m tme_model.hpl_network --check`` prices the run with, taken
    on the grid after the warm-up (:mod:`benchmarks.mpi.hpl_probe`; absent with ``--no-probe``).
"""

from __future__ import annotations

import os

for _v in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ.setdefault(_v, "1")

import json  # noqa: E402
import textwrap  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

from ..hpl import (HEADER, RESIDUAL_LABEL, RULE, THIN, hpl_flops, hpl_problem,  # noqa: E402
                   scaled_residual)
from .hpl_probe import grid_probe  # noqa: E402
from .jobs import PROFILE, RankParser, abort_on_error, idle_barrier, sweep  # noqa: E402
from .plot import hpl_figure  # noqa: E402

PHASES = ("panel", "triangular", "updates", "other", "communication")
KINDS = ("emulated", "native")


def weak_size(n: int, nb: int, ranks: int) -> int:
    """The weak sweep's order on ``ranks`` ranks: ``n ranks^(1/3)`` rounded to the nearest
    multiple of ``nb`` (at least ``nb``), so that ``2/3 n^3 / ranks`` stays about constant."""
    return max(nb, int(round(n * ranks ** (1.0 / 3.0) / nb)) * nb)


def merge_traffic(*traffics) -> dict:
    """``{kind: [bytes, messages]}`` summed over :class:`~ozaki.distributed.traffic.Traffic`
    objects (an empty ``by_kind``: nothing sent)."""
    out: dict = {}
    for t in traffics:
        for kind, (b, m) in (t.by_kind or {}).items():
            have = out.setdefault(kind, [0, 0])
            have[0] += int(b)
            have[1] += int(m)
    return out


def traffic_max(per_rank: list[dict]) -> dict:
    """The largest bytes and the largest messages over ranks, per kind (each apart)."""
    kinds = sorted({k for t in per_rank for k in t})
    return {k: [max(t.get(k, [0, 0])[0] for t in per_rank),
                max(t.get(k, [0, 0])[1] for t in per_rank)] for k in kinds}


def set_efficiency(runs: list[dict]) -> None:
    """``efficiency = gflops / (ranks gflops_1)`` per record, ``gflops_1`` from the first
    1-rank record of the same kind (``None`` without one)."""
    for kind in {r["kind"] for r in runs}:
        one = next((r for r in runs if r["kind"] == kind and r["ranks"] == 1), None)
        for r in runs:
            if r["kind"] == kind:
                r["efficiency"] = (None if one is None else
                                   r["gflops"] / (r["ranks"] * one["gflops"]))


def tv_line(r: dict) -> str:
    """HPL's ``T/V N NB P Q Time Gflops`` line of a record (widths of :data:`HEADER`)."""
    return (f"{r['kind']:<12s}{r['n']:>8d}{r['nb']:>6d}{r['P']:>6d}{r['Q']:>6d}"
            f"{r['seconds']:>19.4f}{r['gflops']:>23.4e}")


def _bits_differ(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return x.view(np.int64) != y.view(np.int64)


def _serial(ref: dict, nb: int) -> dict:
    """Serial ozaki.linalg's ``lu``, ``piv`` and ``x`` on rank 0 (computed once per n)."""
    if "lu" not in ref:
        from ozaki import linalg
        ref["lu"], ref["piv"] = linalg.lu_factor(ref["A"], block_size=nb)
        ref["x"] = linalg.lu_solve((ref["lu"], ref["piv"]), ref["b"][:, None], block_size=nb)
    return ref


def _calls(kind: str):
    from ozaki import distributed as D
    from ozaki.distributed import lu as dlu
    return ((D.lu_factor, D.lu_solve) if kind == "emulated" else
            (dlu.native_lu_factor, dlu.native_lu_solve))


def _timed(comm, kind: str, DA, DB):
    """One factorisation and solve with barriers around each call: this rank's
    ``(factor_s, solve_s)``, the solution and both infos."""
    factor, solve = _calls(kind)
    idle_barrier(comm)  # asleep while rank 0 checks the last run
    comm.Barrier()
    t0 = time.perf_counter()
    lu, piv, finfo = factor(DA, return_info=True)
    comm.Barrier()
    t1 = time.perf_counter()
    X, sinfo = solve((lu, piv), DB, return_info=True)
    comm.Barrier()
    return (t1 - t0, time.perf_counter() - t1), (lu, piv, X), (finfo, sinfo)


def run_case(comm, n: int, nb: int, shape, seed: int, repeats: int, refs: dict,
             cores: int, profile: str | None = None) -> list | None:
    """Both kinds on ``comm``: their records on rank 0, ``None`` elsewhere (with the
    :func:`~benchmarks.mpi.hpl_probe.grid_probe` against the ``profile`` file)."""
    from mpi4py import MPI

    from ozaki import distributed as D

    root = comm.Get_rank() == 0
    if root and n not in refs:  # one problem held at a time (a weak sweep's grow)
        refs.clear()
        A, b = hpl_problem(n, seed)
        refs[n] = {"A": A, "b": b}
    ref = refs.get(n) if root else None
    out = []
    with D.make_grid(shape, comm) as grid:
        nw = min(n, 2 * nb + 3)  # the warm-up: every kernel loaded on every rank
        Aw, bw = hpl_problem(nw, seed + 1) if root else (None, None)
        Dw = [D.scatter(x if root else None, grid, block_size=nb)
              for x in (Aw, None if bw is None else bw[:, None])]
        for kind in KINDS:
            factor, solve = _calls(kind)
            solve(factor(Dw[0]), Dw[1])
        DA = D.scatter(ref["A"] if root else None, grid, block_size=nb)
        DB = D.scatter(ref["b"][:, None] if root else None, grid, block_size=nb)
        probe = grid_probe(DA, profile, repeats=max(repeats, 2), seed=seed) if profile else {}
        for kind in KINDS:
            best, samples = None, []
            for _ in range(repeats):
                secs, result, infos = _timed(comm, kind, DA, DB)
                t = np.array(secs)
                comm.Allreduce(MPI.IN_PLACE, t, op=MPI.MAX)  # the slowest rank's
                samples.append(float(t.sum()))
                if best is None or samples[-1] < best[0].sum():
                    best = (t, result, infos)
            (fs, ss), (lu, piv, X), (finfo, sinfo) = best
            fs, ss = float(fs), float(ss)
            phases = np.array([finfo.seconds.get(p, 0.0) + sinfo.seconds.get(p, 0.0)
                               for p in PHASES])
            comm.Allreduce(MPI.IN_PLACE, phases, op=MPI.MAX)
            sent = comm.gather(merge_traffic(finfo.traffic, sinfo.traffic), root=0)
            lu_all, x_all = D.gather(lu), D.gather(X)
            if not root:
                continue
            rec = {"kind": kind, "n": n, "nb": nb, "grid": f"{grid.P}x{grid.Q}", "P": grid.P,
                   "Q": grid.Q, "ranks": comm.Get_size(), "cores": cores,
                   "oversubscribed": comm.Get_size() > cores, "seed": seed,
                   "seconds": fs + ss, "factor_seconds": fs, "solve_seconds": ss,
                   "samples_s": samples, "gflops": hpl_flops(n) / (fs + ss) / 1e9,
                   **scaled_residual(ref["A"], x_all[:, 0], ref["b"]),
                   **_versus_serial(kind, _serial(ref, nb), lu_all, piv, x_all),
                   "phases": dict(zip(PHASES, map(float, phases))),
                   "communication_share": float(phases[-1]) / (fs + ss),
                   "products": {k: getattr(finfo, a) + getattr(sinfo, a) for k, a in
                                (("total", "products"), ("emulated", "emulated_products"),
                                 ("compensated", "compensated_products"))},
                   "bytes_sent": [sum(v[0] for v in t.values()) for t in sent],
                   "messages_sent": [sum(v[1] for v in t.values()) for t in sent],
                   "traffic_rank0": sent[0], "traffic_max": traffic_max(sent), **probe}
            out.append(rec)
    return out if root else None


def _versus_serial(kind: str, ref: dict, lu: np.ndarray, piv: np.ndarray, x: np.ndarray) -> dict:
    differ = int(_bits_differ(lu, ref["lu"]).sum() + _bits_differ(x, ref["x"]).sum())
    same = differ == 0 and np.array_equal(piv, ref["piv"])
    return {"bitwise_vs_serial": bool(same) if kind == "emulated" else None,
            "pivots_vs_serial": bool(np.array_equal(piv, ref["piv"])),
            "differing_fraction_vs_serial": differ / (lu.size + x.size)}


def main(argv=None) -> int:
    from mpi4py import MPI

    p = RankParser(prog="python -m benchmarks.mpi.hpl",
                   description="HPL under MPI: emulated (ozaki.distributed) and native FP64 LU.")
    p.add_argument("--n", type=int, default=1024,
                   help="matrix order (default 1024; weak sweep: on 1 rank, before rounding)")
    p.add_argument("--nb", type=int, default=128, help="block size of the layout (default 128)")
    p.add_argument("--grid", help="PxQ of a single run (default: as square as the size allows, "
                                  "P <= Q)")
    p.add_argument("--sweep", choices=("strong", "weak"),
                   help="run on 1, 2, 4 ranks: fixed n (strong) or n ~ ranks^(1/3) (weak); "
                        "default: one run on every rank")
    p.add_argument("--seed", type=int, default=0, help="seed of HPL's problem (default 0)")
    p.add_argument("--repeats", type=int, default=1,
                   help="timed calls per kind, the fastest kept (default 1, as HPL)")
    p.add_argument("--no-small-products", action="store_true",
                   help="every product through the emulation (ozaki.set_small_products(False)),"
                        " the serial reference too")
    p.add_argument("--profile", default=str(PROFILE), help="the probes' calibration profile")
    p.add_argument("--no-probe", action="store_true", help="skip the model's measured inputs")
    p.add_argument("--json", metavar="FILE", help="write the runs as JSON (default: none)")
    p.add_argument("--plot", metavar="FILE", help="time and efficiency against ranks (png/svg)")
    a = p.parse_args(argv)
    world = MPI.COMM_WORLD
    rank, size = world.Get_rank(), world.Get_size()
    if a.n < 1 or a.nb < 1 or a.repeats < 1 or a.seed < 0:
        p.error("--n, --nb and --repeats must be positive, --seed non-negative")
    shape = None
    if a.grid:
        if a.sweep:
            p.error("--grid is for a single run; a sweep takes each size's default grid")
        try:
            P, Q = (int(v) for v in a.grid.lower().split("x"))
        except ValueError:
            p.error(f"--grid must look like 2x2, got {a.grid!r}")
        if P < 1 or Q < 1 or P * Q != size:
            p.error(f"--grid {a.grid} needs {P * Q} ranks, the job has {size}")
        shape = (P, Q)
    if a.sweep:
        cases = [(r, (a.n if a.sweep == "strong" else weak_size(a.n, a.nb, r), None))
                 for r in (1, 2, 4) if r <= size]
    else:
        cases = [(size, (a.n, shape))]
    cores = len(os.sched_getaffinity(0))
    refs: dict = {}
    profile = None if a.no_probe else a.profile

    def run(sub, case):
        return run_case(sub, case[0], a.nb, case[1], a.seed, a.repeats, refs, cores, profile)

    import ozaki
    with ozaki.set_small_products(not a.no_small_products):
        if len(cases) > 1:
            runs = sweep(world, cases, run, f"hpl {a.sweep} sweep", lambda c: {"n": c[0]})
        else:
            runs = run(world, cases[0][1]) or []
    if rank == 0:
        set_efficiency(runs)
        _report(runs, a, cores, size)
    return 0


#: What the lines after HPL's mean, printed after the runs.
LEGEND = ("Time: the slowest rank's factorisation plus solve (barriers around each call); "
          "Gflops: HPL's (2/3 n^3 + 3/2 n^2) / Time.  efficiency: Gflops / (ranks x the 1-rank "
          "run's of the same kind in this job) (strong: T1 / (r Tr)).  Phases: the largest time "
          "any rank spent in each; communication's share of Time.  sent: bytes and messages "
          "per kind, rank 0's / the most any rank sent (flat-collective count).  serial bits: "
          "whether lu, piv and x have serial ozaki.linalg's bits (native: the share of entries "
          "that differ; its bits follow the BLAS and the grid).")


def run_lines(r: dict) -> list[str]:
    """HPL's lines of a record and the facts that follow them."""
    over = (f" OVERSUBSCRIBED ({r['ranks']} ranks > {r['cores']} cores)"
            if r["oversubscribed"] else "")
    eff = "-" if r.get("efficiency") is None else f"{r['efficiency']:.2f}"
    if r["kind"] == "emulated":
        bits = "serial bits: " + ("identical" if r["bitwise_vs_serial"] else "DIFFER")
    else:
        bits = f"serial bits: {100 * r['differing_fraction_vs_serial']:.0f}% of entries differ"
    pr = r["products"]
    sent = " ".join(f"{k}={r['traffic_rank0'].get(k, [0, 0])[0]}B/{r['traffic_rank0'].get(k, [0, 0])[1]}"
                    f"|{b}B/{m}" for k, (b, m) in r["traffic_max"].items())
    facts = [f"{r['kind']}: ranks {r['ranks']}{over}; efficiency {eff}; factor "
             f"{r['factor_seconds']:.4f}s + solve {r['solve_seconds']:.4f}s; products "
             f"{pr['total']} ({pr['emulated']} emulated, {pr['compensated']} compensated); {bits}",
             "phases (max over ranks): " + ", ".join(f"{k} {v:.4f}s" for k, v in
                                                     r["phases"].items())
             + f"; communication {100 * r['communication_share']:.0f}% of Time",
             f"sent (bytes/messages, rank 0|most): {sent or 'nothing'}"]
    return [HEADER, THIN, tv_line(r), THIN,
            f"{RESIDUAL_LABEL} {r['residual']:16.9g} ...... "
            f"{'PASSED' if r['passed'] else 'FAILED'}",
            *(w for f in facts for w in textwrap.wrap(f, 100, initial_indent="  ",
                                                       subsequent_indent="    ")), RULE]


def _report(runs: list[dict], a, cores: int, size: int) -> None:
    import ozaki

    from ..bench_common import isa
    m = isa()
    print(f"HPL under MPI: {size} ranks, one thread each, on {cores} usable cores "
          f"({m['cpu']}; {m['summary']}); eps = 2^-53, threshold 16")
    print(RULE)
    for r in runs:
        print("\n".join(run_lines(r)))
    over = " OVERSUBSCRIBED: more ranks than cores, the times say nothing about speed."
    print(textwrap.fill("Legend: " + LEGEND
                        + (over if any(r["oversubscribed"] for r in runs) else ""), 100))
    doc = {"meta": {"ranks": size, "cores": cores, "cpu_count": os.cpu_count(),
                    "threads_per_rank": 1, "cpu": m["cpu"], "isa": m["summary"],
                    "ozaki": str(ozaki.resolve_options()), "n": a.n, "nb": a.nb,
                    "seed": a.seed, "sweep": a.sweep, "repeats": a.repeats,
                    "profile": None if a.no_probe else a.profile,
                    "small_products": not a.no_small_products, "eps": 2.0 ** -53,
                    "threshold": 16.0,
                    "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())},
           "runs": runs}
    if a.json:
        with open(a.json, "w") as fh:
            json.dump(doc, fh, indent=1)
    if a.plot:
        hpl_figure(doc, a.plot)
        print(f"plot -> {a.plot}")


if __name__ == "__main__":
    raise SystemExit(abort_on_error(main))
