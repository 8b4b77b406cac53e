"""Calibrate the alpha-beta network term of :mod:`tme_model.network` on the local MPI.

``mpiexec -n 2 python -m benchmarks.mpi.network [-o network.json]`` times a ping-pong
between ranks 0 and 1 (``Send``/``Recv`` of 8 B to 8 MiB, half the round trip) and fits
``t = alpha + b / beta`` with :func:`tme_model.network.fit_alpha_beta`; the file is
what ``tme_model.network.load_network(FILE)`` reads.  Extra ranks idle.
"""

from __future__ import annotations

import os

for _v in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ.setdefault(_v, "1")

import argparse  # noqa: E402
import json  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

SIZES = [8 << (2 * i) for i in range(11)]  # 8 B ... 8 MiB


def ping_pong(comm, sizes=SIZES, seconds: float = 0.05) -> list[float]:
    """One-way times (half round trip, the minimum of batches) between ranks 0 and 1 of
    ``comm`` (a two-rank communicator), as rank 0 measured them."""
    rank = comm.Get_rank()
    if rank > 1:
        return []
    other = 1 - rank
    out = []
    for size in sizes:
        buf = np.zeros(size // 8)
        reps = int(max(3, min(2000, seconds / (2e-6 + size / 2e9))))
        best = np.inf
        for _ in range(3):
            comm.Barrier()
            t0 = time.perf_counter()
            for _ in range(reps):
                if rank == 0:
                    comm.Send(buf, dest=other, tag=1)
                    comm.Recv(buf, source=other, tag=2)
                else:
                    comm.Recv(buf, source=other, tag=1)
                    comm.Send(buf, dest=other, tag=2)
            best = min(best, (time.perf_counter() - t0) / (2 * reps))
        out.append(float(best))
    return out


def calibrate(comm) -> dict | None:
    """Ping-pong on ranks 0 and 1 of ``comm`` and the fit; the record on every rank."""
    from tme_model.network import fit_alpha_beta

    pair = comm.Split(0 if comm.Get_rank() < 2 else 1, comm.Get_rank())
    times = ping_pong(pair) if comm.Get_rank() < 2 else []
    pair.Free()
    from .jobs import idle_barrier
    idle_barrier(comm)  # the other ranks wait asleep, not spinning on the cores
    times = comm.bcast(times, root=0)
    if not times:
        return None
    alpha, beta = fit_alpha_beta(SIZES, times)
    return {"schema": "tme-network/1", "name": "this machine's MPI (ping-pong, shared memory)",
            "alpha_s": alpha, "beta_bps": beta, "sizes": SIZES, "seconds": times,
            "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}


def load_net(comm, spec: str | None):
    """The network of the predictions and its calibration record: ``spec`` (a key of
    ``tme_model/data/networks.toml`` or a file), else a ping-pong now (more than one
    rank), else NDR (one rank: no communication to predict)."""
    from tme_model.network import Network, load_network

    rec = calibrate(comm) if spec is None and comm.Get_size() > 1 else None
    if spec:
        return load_network(spec), None
    if rec:
        return Network("local", rec["name"], rec["alpha_s"], rec["beta_bps"],
                       "ping-pong in this job"), rec
    return load_network("ndr"), None


def main(argv=None) -> int:
    from mpi4py import MPI

    from .jobs import RankParser

    p = RankParser(prog="python -m benchmarks.mpi.network", description=__doc__,
                   formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("-o", "--output", default="network.json",
                   help="the calibration record to write (default network.json)")
    a = p.parse_args(argv)
    comm = MPI.COMM_WORLD
    if comm.Get_size() < 2:
        p.error("run under mpiexec -n 2 (a ping-pong needs two ranks)")
    rec = calibrate(comm)
    if comm.Get_rank() == 0:
        with open(a.output, "w") as fh:
            json.dump(rec, fh, indent=2)
        print(f"alpha = {rec['alpha_s'] * 1e6:.2f} us, beta = {rec['beta_bps'] / 1e9:.2f} GB/s "
              f"-> {a.output}")
    return 0


if __name__ == "__main__":
    from .jobs import abort_on_error
    raise SystemExit(abort_on_error(main))
