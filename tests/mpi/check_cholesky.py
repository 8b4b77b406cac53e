"""Run under ``mpiexec -n 4``: distributed cho_factor / cho_solve against serial
ozaki.linalg, bit for bit, on grids 1x4, 2x2, 4x1 (and 1x1, 2x1 on sub-communicators),
lower and upper forms.

Prints one line per case on rank 0 and ``ALL OK`` at the end; any mismatch raises.
"""

import numpy as np
from mpi4py import MPI

import ozaki.linalg as la
from ozaki import distributed
from ozaki.core import compensated
from mpi_checks import raises, same

world = MPI.COMM_WORLD
rank = world.Get_rank()


def case(name, A, shape, nb, lower, sub=None, **kw):
    comm = world if sub is None else sub
    if comm == MPI.COMM_NULL:
        return
    want_c, _ = la.cho_factor(A, lower=lower, block_size=nb, **kw)
    b = np.random.default_rng(A.shape[0]).standard_normal((A.shape[0], 2))
    want_x = la.cho_solve((want_c, lower), b, block_size=nb, **kw)
    with distributed.make_grid(shape, comm) as grid:
        D = distributed.scatter(A if comm.Get_rank() == 0 else None, grid, block_size=nb)
        local0 = D.local.copy()
        c, low, info = distributed.cho_factor(D, lower=lower, return_info=True, **kw)
        assert low is lower and same(D.local, local0), "cho_factor modified its input"
        got = distributed.gather(c, root=None)
        assert same(got, want_c), f"{name} {shape}: {int((got != want_c).sum())} entries differ"
        B = distributed.scatter(b if comm.Get_rank() == 0 else None, grid, block_size=nb)
        x = distributed.gather(distributed.cho_solve((c, lower), B, **kw), root=None)
        assert same(x, want_x), f"{name} {shape}: the solutions differ"
        if comm.Get_rank() == 0:
            print(f"ok {name} grid={shape} nb={nb} lower={lower} products={info.products} "
                  f"emulated={info.emulated_products}", flush=True)


rng = np.random.default_rng(31)
G = rng.standard_normal((150, 150))
A = G @ G.T + 150 * np.eye(150)
one = world.Split(0 if rank == 0 else MPI.UNDEFINED, 0)
two = world.Split(0 if rank < 2 else MPI.UNDEFINED, rank)
SMALL_WORK, compensated.SMALL_WORK = compensated.SMALL_WORK, 0  # the emulated path
for shape in [(2, 2), (1, 4), (4, 1)]:
    for lower in (True, False):
        case("spd", A, shape, 16, lower)
case("spd fast", A, (2, 2), 24, False, mode="fast")
case("spd int8", A, (4, 1), 32, True, scheme="int8")
case("spd", A, (1, 1), 16, True, sub=one)
case("spd", A, (2, 1), 16, False, sub=two)
s = np.exp2(rng.integers(-40, 40, 150))
case("scaled", A * s[:, None] * s, (2, 2), 16, True, scheme="int8")
compensated.SMALL_WORK = SMALL_WORK
case("small products", A, (2, 2), 16, False)
case("small products", A, (4, 1), 16, True)

with distributed.make_grid((2, 2)) as grid:
    bad = A.copy()
    bad[70, 70] = -1.0  # the 71st leading minor is not positive definite
    for lower in (True, False):
        try:
            la.cho_factor(bad, lower=lower, block_size=16)
        except np.linalg.LinAlgError as exc:
            message = str(exc)
        D = distributed.scatter(bad if rank == 0 else None, grid, block_size=16)
        raises(np.linalg.LinAlgError, message, lambda: distributed.cho_factor(D, lower=lower))
    D = distributed.scatter(A[:, :149] if rank == 0 else None, grid, block_size=16)
    raises(ValueError, "square", lambda: distributed.cho_factor(D))
if rank == 0:
    print("ALL OK", flush=True)
