"""Distributed 3-D FFT benchmark: ``fft.distributed.fftn`` / ``rfftn`` on slabs and pencils.

``mpiexec -n 4 python -m benchmarks.mpi.fft3d --n 128 --grid 2x2 --json out.json`` runs
one grid; ``--sweep strong`` runs ``n^3`` on 1, 2 and 4 ranks (sub-communicators of
``COMM_WORLD``), slabs (``r x 1``) on each and pencils (``2 x 2``) on 4, and draws a
plot (``--plot FILE``, rank 0). ``--transform r2c`` times ``rfftn`` instead of
``fftn``. One thread per rank (BLAS and numba).

Per run, for the emulated transform (default plans) and the same pipeline on native
plans (``fft.Plan(n, native=True)``: FP64 GEMM stages, the same exchanges): ranks, grid,
decomposition, ``n``, the fastest forward time (max over ranks), its phases (max over
ranks of :attr:`fft.distributed.FFTInfo.seconds`: local transforms, ``Alltoallv``
transposes with their waiting, packing, other passes), GFLOP/s (``5 N log2 N / t``,
``N = n^3``; half that count for ``r2c``), the bytes and messages each rank sent (exact,
flat convention), the 64-bit words whose bits differ from the serial call with the same
plans (0 for the emulated transform: the promise), the relative L2 error against
``scipy.fft`` (complex128, one thread), the serial ``scipy.fft`` time in the same job
(the native baseline) and the TME prediction (:func:`tme_model.fft_network.fft3d_time`:
the stage products and passes from the calibration profile, divided by the rank's rates
measured at the largest stage's shape with every rank running,
:mod:`benchmarks.mpi.probe`, plus the alpha-beta term of the exchanges with alpha, beta
from a ping-pong in the same job). Runs on more ranks than cores are labelled
``oversubscribed``: correctness, not speed.
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

from .jobs import PROFILE, RankParser, abort_on_error, idle_barrier, meta, sweep  # noqa: E402
from .network import load_net  # noqa: E402

PHASES = ("transforms", "transposes", "packing", "passes")


def _cases(size: int, sweep: bool, grid: str | None) -> list[tuple[int, tuple[int, int]]]:
    if not sweep:
        if grid:
            try:
                P, Q = (int(v) for v in grid.lower().split("x"))
            except ValueError:
                raise SystemExit(f"--grid must look like 2x2, got {grid!r}") from None
            if P * Q != size:
                raise SystemExit(f"--grid {grid} needs {P * Q} ranks, the job has {size}")
        else:
            P = max(d for d in range(1, int(size ** 0.5) + 1) if size % d == 0)
            Q = size // P
        return [(size, (P, Q))]
    out = []
    for r in (1, 2, 4):
        if r <= size:
            out.append((r, (r, 1)))
            if r == 4:
                out.append((r, (2, 2)))
    return out


def _serial(n: int, transform: str) -> dict:
    """Rank 0's input and references: serial emulated and native-plan transforms, scipy
    (its time: the fastest of three one-thread calls after a warm-up)."""
    import scipy.fft as sf

    import fft
    rng = np.random.default_rng(n)
    X = rng.standard_normal((n, n, n))
    if transform == "c2c":
        X = X + 1j * rng.standard_normal((n, n, n))
    f = fft.fftn if transform == "c2c" else fft.rfftn
    g = sf.fftn if transform == "c2c" else sf.rfftn
    native = [fft.get_plan(n, native=True)] * 3
    ref = g(X, workers=1)  # warm: scipy's plan cache
    scipy_s = np.inf
    for _ in range(3):
        t0 = time.perf_counter()
        g(X, workers=1)
        scipy_s = min(scipy_s, time.perf_counter() - t0)
    return {"X": X, "emulated": f(X), "native": f(X, plan=native), "scipy": ref,
            "scipy_s": scipy_s}


def _rates(comm, profile, n: int, P: int, Q: int, transform: str, native: bool):
    """This rank's rates at the shape of axis 2's first stage (the largest product); the
    products' rate from a serial ``ozaki.dgemm`` (its store pass included), as the
    stages run them."""
    import fft
    from fft.distributed.layout import block
    from tme_model.fft_workload import plan_workload

    from .probe import rank_rates
    idx = block((n, n, n), P, Q, (0, 1), comm.Get_rank())
    width = max(1, int(np.prod([s.stop - s.start for s in idx[:2]])))
    wl = plan_workload(fft.get_plan(n, native=native), width, real_in=transform == "r2c")
    st = wl.stages[0]
    kw = {} if native else dict(scheme=wl.scheme, num_moduli=st.num_moduli, engine=wl.engine,
                                products="serial")
    return rank_rates(comm, profile, (st.m, st.k, st.n), repeats=3, **kw)["rates"]


def run_case(comm, n: int, shape, transform: str, repeats: int, refs: dict, cores: int,
             profile, net):
    """The emulated and native-plan transforms on ``comm``: records on rank 0."""
    from mpi4py import MPI

    import fft
    from fft import distributed as dfft
    from ozaki.distributed import make_grid
    from tme_model.fft_network import fft3d_flops, fft3d_time

    root = comm.Get_rank() == 0
    with make_grid(shape, comm) as grid:
        x = dfft.scatter(refs["X"] if root else None, grid)
        f = dfft.fftn if transform == "c2c" else dfft.rfftn
        out = []
        for kind in ("emulated", "native"):
            plan = [fft.get_plan(n, native=kind == "native")] * 3
            f(x, plan=plan)  # warm: plans, tables
            best = None
            for _ in range(repeats):
                idle_barrier(comm)
                t0 = time.perf_counter()
                y, info = f(x, plan=plan, return_info=True)
                wall = comm.allreduce(time.perf_counter() - t0, op=MPI.MAX)
                if best is None or wall < best[0]:
                    best = (wall, info)
            wall, info = best
            phases = np.array([info.seconds[p] for p in PHASES])
            comm.Allreduce(MPI.IN_PLACE, phases, op=MPI.MAX)
            sent = comm.allgather((info.traffic.bytes, info.traffic.messages))
            whole = dfft.gather(y)
            back = (dfft.ifftn(y, axes=(2, 1, 0), plan=plan) if transform == "c2c" else
                    dfft.irfftn(y, s=(n, n, n), axes=(1, 0, 2), plan=plan))
            back = dfft.gather(back)
            rates = _rates(comm, profile, n, grid.P, grid.Q, transform, kind == "native")
            every = comm.allgather(rates)
            model = None
            if root:  # the slowest rank's rates price every rank (conservative, simple)
                worst = {k: min(r[k] for r in every) for k in every[0]}
                model = fft3d_time((n, n, n), grid.P, grid.Q, profile, net,
                                   transform=transform, plans=plan,
                                   rates=_all_kinds(worst))
            if not root:
                continue
            want, ref = refs[kind], refs["scipy"]
            rec = {"kind": kind, "transform": transform, "ranks": comm.Get_size(),
                   "grid": f"{grid.P}x{grid.Q}", "n": n,
                   "decomposition": x.decomposition, "seconds": wall,
                   "phases": dict(zip(PHASES, map(float, phases))),
                   "gflops": fft3d_flops((n, n, n), transform) / wall / 1e9,
                   "bytes_sent": [s[0] for s in sent], "messages_sent": [s[1] for s in sent],
                   "differing_words_vs_serial": int(np.sum(
                       whole.view(np.int64) != want.view(np.int64))),
                   "rel_l2_error_vs_scipy": float(np.linalg.norm(whole - ref)
                                                  / np.linalg.norm(ref)),
                   "roundtrip_max_error": float(np.abs(back - refs["X"]).max()
                                                / np.abs(refs["X"]).max()),
                   "scipy_serial_s": refs["scipy_s"], "vs_scipy": wall / refs["scipy_s"],
                   "rates": every, "oversubscribed": comm.Get_size() > cores,
                   "predicted_s": model["total_s"],
                   "predicted": model,
                   "predicted_over_measured": model["total_s"] / wall}
            out.append(rec)
    return out if root else None


def _all_kinds(rates: dict):
    """:class:`tme_model.network.RankRates` from a probe's rates: a native probe
    measures ``gemm`` and ``stream`` only (the emulated kinds are then unused)."""
    from dataclasses import fields

    from tme_model.network import RankRates
    return RankRates(**{f.name: rates.get(f.name, rates["gemm"]) for f in fields(RankRates)})


def main(argv=None) -> int:
    from mpi4py import MPI

    p = RankParser(prog="python -m benchmarks.mpi.fft3d",
                   description="Distributed 3-D FFTs (slabs, pencils) under MPI.")
    p.add_argument("--n", type=int, default=128, help="n of the n^3 array (default 128)")
    p.add_argument("--grid", help="PxQ (default: as square as the size allows)")
    p.add_argument("--sweep", choices=("strong",),
                   help="slabs on 1, 2, 4 ranks and pencils (2x2) on 4; default: one run on "
                        "every rank")
    p.add_argument("--transform", choices=("c2c", "r2c"), default="c2c",
                   help="fftn (c2c, default) or rfftn (r2c)")
    p.add_argument("--repeats", type=int, default=2,
                   help="runs per case, the fastest kept (default 2)")
    p.add_argument("--json", metavar="FILE", help="write the runs as JSON (default: none)")
    p.add_argument("--plot", metavar="FILE", help="sweep plot (png/svg/pdf)")
    p.add_argument("--table", metavar="FILE", help="the runs as an RST table (for the docs)")
    p.add_argument("--network", metavar="KEY|FILE",
                   help="alpha-beta network for the predictions (default: calibrate now)")
    p.add_argument("--profile", default=str(PROFILE),
                   help="TME calibration profile (default docs/_generated/tme_profile.json)")
    a = p.parse_args(argv)
    if a.n < 2 or a.repeats < 1:
        p.error("--n must be at least 2 and --repeats positive")
    world = MPI.COMM_WORLD
    rank, size = world.Get_rank(), world.Get_size()
    cores = len(os.sched_getaffinity(0))
    from tme_model.profile_file import load_profile
    profile = load_profile(a.profile)
    net, net_rec = load_net(world, a.network)
    try:
        cases = _cases(size, a.sweep is not None, a.grid)
    except SystemExit as exc:  # a bad --grid: a usage error, printed once
        p.error(str(exc.code))
    refs = _serial(a.n, a.transform) if rank == 0 else {}
    runs = sweep(world, cases,
                 lambda sub, shape: run_case(sub, a.n, shape, a.transform, a.repeats, refs,
                                             cores, profile, net),
                 f"fft3d n={a.n}", lambda shape: {"grid": f"{shape[0]}x{shape[1]}"})
    if rank == 0:
        _report(runs, net, net_rec, a, cores, size)
    return 0


#: What the report's words and numbers mean, printed after the runs.
LEGEND = ("t: the slowest rank's time of the fastest repeat.  Nx scipy: t / the time of "
          "serial scipy.fft on one thread.  model Nx: the TME model's predicted time / the "
          "measured one (1: exact; below 1: the run was slower than modelled).  sent/rank: the "
          "most bytes a rank sent.  bits differ: 64-bit words whose bits differ from the serial "
          "call with the same plans (0 for the emulated transform).  err vs scipy: relative L2 "
          "distance to scipy.fft.")


def _report(runs, net, net_rec, a, cores, size):
    for r in runs:
        print(f"{r['kind']:8s} {r['transform']} ranks={r['ranks']} grid={r['grid']} "
              f"({r['decomposition']}) n={r['n']} t={r['seconds']:.3f}s "
              f"({r['gflops']:.2f} GFLOP/s, {r['vs_scipy']:.1f}x scipy; model "
              f"{r['predicted_over_measured']:.2f}x) sent/rank={max(r['bytes_sent'])} B "
              f"bits differ {r['differing_words_vs_serial']} err vs scipy "
              f"{r['rel_l2_error_vs_scipy']:.1e}"
              f"{' OVERSUBSCRIBED' if r['oversubscribed'] else ''}")
    if runs:
        over = " OVERSUBSCRIBED: more ranks than cores, the times say nothing about speed."
        print("\n" + textwrap.fill("Legend: " + LEGEND
                                   + (over if any(r["oversubscribed"] for r in runs) else ""), 100))
    doc = {"meta": meta(net, net_rec, a.profile, ranks=size, cores=cores, n=a.n,
                        transform=a.transform, sweep=a.sweep, repeats=a.repeats),
           "runs": runs}
    if a.json:
        with open(a.json, "w") as fh:
            json.dump(doc, fh, indent=2)
    if a.table:
        with open(a.table, "w") as fh:
            fh.write(table(runs))
    if a.plot:
        from .plot import fft_figure
        fft_figure(doc, a.plot)
        print(f"plot -> {a.plot}")


def table(runs: list[dict]) -> str:
    """The runs as an RST list-table: times, phases, traffic, errors, the model."""
    head = ["plans", "ranks", "grid", "n", "time [s]", "GFLOP/s", "vs scipy", "local FFTs",
            "Alltoallv", "packing", "MB sent/rank", "bits differ", "err vs scipy",
            "model/measured"]
    rows = []
    for r in runs:
        ph = r["phases"]
        rows.append([r["kind"], f"{r['ranks']}{'*' if r['oversubscribed'] else ''}",
                     f"{r['grid']} {r['decomposition']}", str(r["n"]), f"{r['seconds']:.3f}",
                     f"{r['gflops']:.2f}", f"{r['vs_scipy']:.1f}x", f"{ph['transforms']:.3f}",
                     f"{ph['transposes']:.3f}", f"{ph['packing']:.3f}",
                     f"{max(r['bytes_sent']) / 1e6:.1f}", str(r["differing_words_vs_serial"]),
                     f"{r['rel_l2_error_vs_scipy']:.1e}", f"{r['predicted_over_measured']:.2f}"])
    out = [".. list-table::", "   :header-rows: 1", ""]
    for row in [head] + rows:
        out.append("   * - " + row[0])
        out += [f"     - {c}" for c in row[1:]]
    return "\n".join(out) + "\n"


def _fp64_main():
    """:func:`main` with the default plans on the fp64 scheme (``ozaki.set_scheme``): the
    calibrated profile the model reads (docs/_generated/tme_profile.json) times fp64 on
    cpu-blas, where "auto" would follow the machine (int8 on cpu-onednn with VNNI)."""
    import ozaki
    with ozaki.set_scheme("fp64"):
        return main()


if __name__ == "__main__":
    raise SystemExit(abort_on_error(_fp64_main))
