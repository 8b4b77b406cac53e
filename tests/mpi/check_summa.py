"""Run under ``mpiexec -n 4``: the native FP64 SUMMA against the FP64 error bound, and
its bits against serial numpy ``A @ B`` beside those of the emulated ``distributed.dgemm``.

Prints on rank 0 one ``ok`` line per accuracy case, one ``bits`` line per grid and
panel width (fraction of entries whose bits differ from numpy, for the native and the
emulated SUMMA), and ``ALL OK`` at the end; a failure raises.
"""

import numpy as np
from mpi4py import MPI

import ozaki
from ozaki import distributed
from mpi_checks import raises

world = MPI.COMM_WORLD
rank = world.Get_rank()
u = 2.0 ** -53


def run(A, B, shape, panel, emulated=False):
    grid = distributed.make_grid(shape, world)
    dA = distributed.scatter(A if rank == 0 else None, grid)
    dB = distributed.scatter(B if rank == 0 else None, grid)
    if emulated:
        return distributed.gather(distributed.dgemm(dA, dB, panel=panel, mode="fast"), root=None), None
    C, info = distributed.summa(dA, dB, panel=panel, return_info=True)
    return distributed.gather(C, root=None), info


def accuracy(name, A, B, shape, panel):
    C, info = run(A, B, shape, panel)
    exact = ozaki.dgemm(A, B, mode="accurate")  # within u|AB| + u|A||B| of the exact product
    K = A.shape[1]
    AB = np.abs(A) @ np.abs(B)
    bound = ((K + 2) * u * (1 + 1e-12)) * AB  # gamma_K |A||B| plus the reference's error
    err = np.abs(C - exact)
    assert C.shape == exact.shape and np.all(err <= bound), (name, shape, float(
        (err / np.where(AB > 0, AB, 1)).max()))
    P, Q = shape
    cuts = distributed.panels(K, P, Q, panel)
    assert info.panels == len(cuts)
    grid = distributed.make_grid(shape, world)
    m = len(range(*distributed.bounds(A.shape[0], P)[[grid.p, grid.p + 1]]))
    n = len(range(*distributed.bounds(B.shape[1], Q)[[grid.q, grid.q + 1]]))
    # flat-collective count: each panel's owner sends its panel to the other ranks
    akb, bkb = distributed.bounds(K, Q), distributed.bounds(K, P)
    want = 0
    for k0, k1 in cuts:
        if grid.q == np.searchsorted(akb, k0, side="right") - 1:
            want += (Q - 1) * m * (k1 - k0) * 8
        if grid.p == np.searchsorted(bkb, k0, side="right") - 1:
            want += (P - 1) * (k1 - k0) * n * 8
    assert info.traffic.bytes == want, (name, shape, info.traffic.bytes, want)
    if rank == 0:
        print(f"ok {name} grid={shape} panel={panel} panels={info.panels}", flush=True)


rng = np.random.default_rng(21)
A = rng.standard_normal((37, 53)) * np.exp2(rng.integers(-8, 8, (37, 1)))
B = rng.standard_normal((53, 29))
for shape in [(2, 2), (1, 4), (4, 1)]:
    for panel in (5, 512):
        accuracy("uneven", A, B, shape, panel)
accuracy("more ranks than rows", A[:3], B, (4, 1), 7)
accuracy("empty k", A[:, :0], B[:0], (2, 2), 512)

# the bits: native SUMMA's change with the grid and the panel, the emulated ones do not
A = rng.standard_normal((40, 512))
B = rng.standard_normal((512, 36))
ref = A @ B
serial = ozaki.dgemm(A, B, mode="fast")
for shape in [(2, 2), (1, 4), (4, 1)]:
    for panel in (64, 512):
        native, _ = run(A, B, shape, panel)
        emulated, _ = run(A, B, shape, panel, emulated=True)
        differ = float(np.mean(native.view(np.int64) != ref.view(np.int64)))
        emu = int(np.sum(emulated.view(np.int64) != serial.view(np.int64)))
        assert emu == 0, (shape, panel, emu)
        if panel == 64:  # below BLAS's own k-blocking: another summation order
            assert differ > 0, (shape, panel)
        if rank == 0:
            print(f"bits grid={shape} panel={panel} native_differ={differ:.4f} "
                  f"emulated_differ={emu}", flush=True)


grid = distributed.make_grid((2, 2), world)
dA = distributed.scatter(A if rank == 0 else None, grid)
dB = distributed.scatter(B[:50] if rank == 0 else None, grid)
raises(ValueError, "inner dimensions differ", lambda: distributed.summa(dA, dB))
dB = distributed.scatter(B if rank == 0 else None, grid)
raises(ValueError, "panel must be", lambda: distributed.summa(dA, dB, panel=0))
raises(TypeError, "DistributedMatrix", lambda: distributed.summa(A, dB))
if rank == 0:
    print("ALL OK", flush=True)
