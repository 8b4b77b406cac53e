"""Distributed GEMM benchmark: emulated (``ozaki.distributed.dgemm``) and native SUMMA.

``mpiexec -n 4 python -m benchmarks.mpi.summa --n 4096 --grid 2x2 --json out.json``
runs both on one grid; ``--sweep strong`` (fixed ``n``) or ``--sweep weak`` (``n``
grown as ``n (r)^(1/3)``: the same flops per rank) runs them on 1, 2, 4 ranks
(sub-communicators of ``COMM_WORLD``, the default grid of each size) and draws a plot
(``--plot FILE``, rank 0).  One thread per rank (BLAS and numba).

Per run: ranks, grid, n, scheme, count, time per phase (max over ranks: ``gemms`` the
local products, ``passes`` the O(n^2) passes of the emulation -- scaling, residues,
reconstruction --, ``communication`` the broadcasts and reductions, waiting included;
``outside_phases_s`` the largest time a rank spent in none of them: argument checks
and allocations),
GFLOP/s (``2 n^3 / t``), bytes and messages each rank sent (``info.traffic``: exact,
flat-collective convention), the error against serial (emulated: entries whose bits
differ from serial ``ozaki.dgemm(..., mode="fast")``, which must be 0; native: the
normwise relative error ``max|C - A@B| / max|A@B|`` and the fraction of entries whose
bits differ from numpy's ``A @ B``), and the time the TME model predicts, in total
and per phase (:mod:`tme_model.network`: the local products and passes from the
calibration profile, each divided by the rank's rate for that kind of work as
:func:`benchmarks.mpi.probe.rank_rates` measures it on every rank at once after the
case -- a native GEMM and a serial ``ozaki.dgemm`` of the rank's panel product, a
STREAM triad --, plus the alpha-beta network term with alpha, beta from a ping-pong in
the same job).  Runs on more ranks
than the machine has cores are labelled ``oversubscribed``: they check correctness,
their times say nothing about speed.
"""

from __future__ import annotations

import os

for _v in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ.setdefault(_v, "1")

import argparse  # noqa: E402
import json  # noqa: E402
import textwrap  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

from .jobs import PROFILE, RankParser, abort_on_error, meta, sweep  # noqa: E402

PHASES = ("gemms", "passes", "communication")


def _record(kind, comm, grid, n, panel, info, wall, cores, elapsed):
    from mpi4py import MPI

    if kind == "emulated":
        s = info.seconds
        mine = [s["products"], s["scaling"] + s["residues"] + s["reconstruction"],
                s["communication"]]
    else:
        mine = [info.seconds["gemms"], 0.0, info.seconds["communication"]]
    # the rank's time in no phase of info.seconds
    phases = np.array(mine + [elapsed - sum(info.seconds.values())])
    comm.Allreduce(MPI.IN_PLACE, phases, op=MPI.MAX)
    tr = info.traffic
    sent = comm.allgather((tr.bytes, tr.messages, dict(tr.by_kind or {})))
    ranks = comm.Get_size()
    return {"kind": kind, "ranks": ranks, "grid": f"{grid.P}x{grid.Q}", "n": n, "panel": panel,
            "scheme": getattr(info, "scheme", "native fp64"),
            "count": getattr(info, "num_moduli", None), "engine": getattr(info, "engine", None),
            "seconds": wall, "phases": dict(zip(PHASES, map(float, phases))),
            "outside_phases_s": float(phases[-1]),
            "gflops": 2.0 * n ** 3 / wall / 1e9,
            "bytes_sent": [s[0] for s in sent], "messages_sent": [s[1] for s in sent],
            "traffic_by_kind": [{k: list(v) for k, v in s[2].items()} for s in sent],
            "oversubscribed": ranks > cores}


def run_case(comm, n: int, shape, panel: int, repeats: int, refs: dict, cores: int):
    """Emulated and native SUMMA on ``comm``: two records (rank 0), ``None`` elsewhere."""
    import ozaki
    from mpi4py import MPI

    from ozaki import distributed as D

    grid = D.make_grid(shape, comm)
    root = comm.Get_rank() == 0
    # the emulated SUMMA, also where "auto" would take the small-product path
    kw = dict(mode="fast", scheme="fp64", **ozaki.emulated_options("fp64", n, n, n))
    if root and n not in refs:
        rng = np.random.default_rng(n)
        A, B = rng.standard_normal((n, n)), rng.standard_normal((n, n))
        refs.clear()
        refs[n] = (A, B, ozaki.dgemm(A, B, **kw), A @ B)
    A, B, serial, numpy_ab = refs[n] if root else (None,) * 4
    dA, dB = D.scatter(A, grid), D.scatter(B, grid)
    out, emu = [], None
    D.dgemm(dA, dB, panel=panel, **kw)  # warm: every rank loads its compiled passes
    for kind in ("emulated", "native"):
        best = None
        for _ in range(repeats):
            comm.Barrier()
            t0 = time.perf_counter()
            if kind == "emulated":
                C, info = D.dgemm(dA, dB, panel=panel, return_info=True, **kw)
            else:
                C, info = D.summa(dA, dB, panel=panel, return_info=True)
            elapsed = time.perf_counter() - t0
            wall = comm.allreduce(elapsed, op=MPI.MAX)
            rec = _record(kind, comm, grid, n, panel, info, wall, cores, elapsed)
            if kind == "emulated":
                emu = (info.scheme, int(info.num_moduli), info.engine)
            best = rec if best is None or rec["seconds"] < best["seconds"] else best
        whole = D.gather(C)
        if root:
            if kind == "emulated":
                best["differing_bits_vs_serial"] = int(np.sum(
                    whole.view(np.int64) != serial.view(np.int64)))
            else:
                best["max_rel_error_vs_numpy"] = float(np.abs(whole - numpy_ab).max()
                                                       / np.abs(numpy_ab).max())
                best["differing_fraction_vs_numpy"] = float(np.mean(
                    whole.view(np.int64) != numpy_ab.view(np.int64)))
        out.append(best)
    return (out if root else None), grid, emu


def _blocks(size: int, parts: int) -> np.ndarray:
    """Block lengths of the even cut (:func:`ozaki.distributed.bounds`)."""
    from ozaki.distributed.layout import bounds
    return np.diff(bounds(size, parts))


def probe_rates(comm, profile, grid, n: int, panel: int, emu) -> list | None:
    """Every rank's :func:`~benchmarks.mpi.probe.rank_rates` on its own panel product
    (``m_p x w x n_q``, ``w`` the widest panel), gathered on rank 0."""
    from tme_model.network import panel_widths

    from .probe import rank_rates

    w = max(w for w, _, _ in panel_widths(n, grid.P, grid.Q, panel))
    m, c = _blocks(n, grid.P)[grid.p], _blocks(n, grid.Q)[grid.q]
    scheme, count, engine = emu
    shape = tuple(max(1, int(x)) for x in (m, w, c))  # an empty block: its rates unused
    got = rank_rates(comm, profile, shape, scheme=scheme, num_moduli=count, engine=engine)
    return comm.gather(got, root=0)


def predict(rec: dict, profile, net, probes: list) -> dict:
    """The model's time of a record, in total and per phase (see the module docstring).

    ``probes``: :func:`~benchmarks.mpi.probe.rank_rates` of every rank, in rank order
    (rank ``p Q + q``); the compute is that of the slowest rank, each with its own
    block and rates.
    """
    from tme_model.network import RankRates, panel_widths, summa_comm_s, summa_compute_parts

    P, Q = map(int, rec["grid"].split("x"))
    n, panel = rec["n"], rec["panel"]
    rb, cb = _blocks(n, P), _blocks(n, Q)
    widths = [w for w, _, _ in panel_widths(n, P, Q, panel)]
    emu = rec["kind"] == "emulated"
    kw = dict(scheme=rec["scheme"], moduli=rec["count"], engine=rec.get("engine")) if emu else {}
    parts = [summa_compute_parts(profile, int(rb[p]), int(cb[q]), n, widths, emu,
                                 rates=RankRates(**probes[p * Q + q]["rates"]),
                                 local_k=(int(cb[q]), int(rb[p])), **kw)
             for p in range(P) for q in range(Q)]
    slowest = max(parts, key=lambda d: sum(d.values()))
    compute = sum(slowest.values())
    comm = summa_comm_s(net, n, n, n, P, Q, panel)
    other = [(sum(v[0] for k, v in t.items() if k != "panels"),
              sum(v[1] for k, v in t.items() if k != "panels")) for t in rec["traffic_by_kind"]]
    comm += max(net.message_s(b, m) for b, m in other)  # decisions: tiny, exact counts
    gemms = ("gemms", "products", "accumulation")
    phases = {"gemms": sum(v for k, v in slowest.items() if k in gemms),
              "passes": sum(v for k, v in slowest.items() if k not in gemms),
              "communication": comm}
    return {"predicted_s": compute + comm, "predicted_compute_s": compute,
            "predicted_communication_s": comm, "predicted_phases": phases,
            "predicted_parts": slowest,
            "predicted_over_measured": (compute + comm) / rec["seconds"]}


def main(argv=None) -> int:
    from mpi4py import MPI

    p = RankParser(prog="python -m benchmarks.mpi.summa",
                   description="Emulated and native SUMMA under MPI.")
    p.add_argument("--n", type=int, help="matrix size (default 1024; weak sweep: on 1 rank)")
    p.add_argument("--grid", help="PxQ (default: as square as the size allows)")
    p.add_argument("--panel", type=int, default=512, help="panel width of the SUMMA (default 512)")
    p.add_argument("--sweep", choices=("strong", "weak"),
                   help="run on 1, 2, 4 ranks: fixed n (strong) or n ~ ranks^(1/3) (weak); "
                        "default: one run on every rank")
    p.add_argument("--repeats", type=int, default=2,
                   help="runs per case, the fastest kept (default 2)")
    p.add_argument("--json", metavar="FILE", help="write the runs as JSON (default: none)")
    p.add_argument("--plot", metavar="FILE", help="sweep plot (png/svg/pdf)")
    p.add_argument("--network", metavar="KEY|FILE",
                   help="alpha-beta network for the predictions (default: calibrate now)")
    p.add_argument("--profile", default=str(PROFILE),
                   help="TME calibration profile (default docs/_generated/tme_profile.json)")
    a = p.parse_args(argv)
    world = MPI.COMM_WORLD
    rank, size = world.Get_rank(), world.Get_size()
    cores = len(os.sched_getaffinity(0))
    n = a.n or (768 if a.sweep == "weak" else 1024)
    if n < 1 or a.panel < 1 or a.repeats < 1:
        p.error("--n, --panel and --repeats must be positive")
    from tme_model.profile_file import load_profile

    from .network import load_net

    profile = load_profile(a.profile)
    net, net_rec = load_net(world, a.network)
    if a.sweep:
        ranks = [r for r in (1, 2, 4) if r <= size]
        cases = [(r, n if a.sweep == "strong" else int(round(n * r ** (1 / 3) / 8)) * 8, None)
                 for r in ranks]
    else:
        cases = [(size, n, a.grid)]
    refs: dict = {}

    def run(sub, case):
        nn, shape = case
        got, grid, emu = run_case(sub, nn, shape, a.panel, a.repeats, refs, cores)
        probes = probe_rates(sub, profile, grid, nn, a.panel, emu)
        grid.free()
        for rec in got or []:
            rec["rank_rates"] = [{**pr["rates"], "shape": list(pr["shape"])} for pr in probes]
            rec.update(predict(rec, profile, net, probes))
        return got

    runs = sweep(world, [(r, (nn, shape)) for r, nn, shape in cases], run,
                 f"{a.sweep or 'one'} sweep", lambda c: {"n": c[0]})
    if rank == 0:
        _report(runs, net, net_rec, a, cores, size)
    return 0


#: What the report's words and numbers mean, printed after the runs.
LEGEND = ("t: the slowest rank's time of the fastest repeat.  model Nx: the TME model's "
          "predicted time / the measured one (1: exact; below 1: the run was slower than "
          "modelled).  Phases: the largest time any rank spent in each (model: its "
          "prediction); 'in no phase': time outside gemms, passes and communication (argument "
          "checks, allocations).  sent/rank: the most bytes a rank sent.  Emulated: entries "
          "whose bits differ from serial ozaki.dgemm (must be 0); native: max|C - A@B| / "
          "max|A@B| against numpy's A @ B and the share of entries whose bits differ from it.")


def _report(runs, net, net_rec, a, cores, size):
    for r in runs:
        err = (f"bits differ {r['differing_bits_vs_serial']}" if r["kind"] == "emulated" else
               f"rel err {r['max_rel_error_vs_numpy']:.1e}, "
               f"{100 * r['differing_fraction_vs_numpy']:.0f}% bits differ")
        print(f"{r['kind']:8s} ranks={r['ranks']} grid={r['grid']} n={r['n']} "
              f"t={r['seconds']:.3f}s ({r['gflops']:.1f} GFLOP/s; model "
              f"{r['predicted_over_measured']:.2f}x) sent/rank={max(r['bytes_sent'])} B "
              f"{err}{' OVERSUBSCRIBED' if r['oversubscribed'] else ''}")
        print("         " + ", ".join(f"{ph} {r['phases'][ph]:.3f}s (model "
                                      f"{r['predicted_phases'][ph]:.3f}s)" for ph in PHASES)
              + f", in no phase {r['outside_phases_s']:.3f}s")
    if runs:
        over = " OVERSUBSCRIBED: more ranks than cores, the times say nothing about speed."
        print("\n" + textwrap.fill("Legend: " + LEGEND
                                   + (over if any(r["oversubscribed"] for r in runs) else ""), 100))
    doc = {"meta": meta(net, net_rec, a.profile, ranks=size, cores=cores, panel=a.panel,
                        sweep=a.sweep, repeats=a.repeats),
           "runs": runs}
    if a.json:
        with open(a.json, "w") as fh:
            json.dump(doc, fh, indent=2)
    if a.plot and a.sweep:
        from .plot import sweep_figure
        sweep_figure(doc, a.plot)
        print(f"plot -> {a.plot}")


if __name__ == "__main__":
    raise SystemExit(abort_on_error(main))
