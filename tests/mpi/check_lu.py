"""Run under ``mpiexec -n 4``: distributed lu_factor / lu_solve against serial
ozaki.linalg, bit for bit, on grids 1x4, 2x2, 4x1 (and 1x1, 2x1 on sub-communicators).

Prints one line per case on rank 0 and ``ALL OK`` at the end; any mismatch raises
(the exit status is non-zero and mpiexec stops the other ranks).
"""

import warnings

import numpy as np
from mpi4py import MPI

import ozaki.linalg as la
from ozaki import distributed
from ozaki.core import compensated
from mpi_checks import raises, same

world = MPI.COMM_WORLD
rank = world.Get_rank()

# the infos of the updates' products, to check that the cases reach what they mean to
import ozaki.distributed.factor as dlu  # noqa: E402
seen = []
_product = dlu.product


def _recorded(*args, **kw):
    X, info = _product(*args, **kw)
    seen.append(info)
    return X, info


dlu.product = _recorded


def case(name, A, shape, nb, sub=None, rhs=3, expect=None, **kw):
    comm = world if sub is None else sub
    if comm == MPI.COMM_NULL:
        return
    seen.clear()
    with warnings.catch_warnings(record=True) as serial_warn:
        warnings.simplefilter("always")
        want_lu, want_piv = la.lu_factor(A, block_size=nb, **kw)
    with distributed.make_grid(shape, comm) as grid:
        D = distributed.scatter(A if comm.Get_rank() == 0 else None, grid, block_size=nb)
        local0 = D.local.copy()
        with warnings.catch_warnings(record=True) as dist_warn:
            warnings.simplefilter("always")
            lu, piv, info = distributed.lu_factor(D, return_info=True, **kw)
        assert same(D.local, local0), "lu_factor modified its input"
        assert [str(w.message) for w in dist_warn] == [str(w.message) for w in serial_warn]
        got = distributed.gather(lu, root=None)
        assert np.array_equal(piv, want_piv), f"{name} {shape}: pivots differ"
        assert same(got, want_lu), f"{name} {shape}: {int((got != want_lu).sum())} entries differ"
        n = A.shape[0]
        if A.shape[0] == A.shape[1] and rhs and not serial_warn:
            b = np.random.default_rng(n).standard_normal((n, rhs))
            want_x = la.lu_solve((want_lu, want_piv), b, block_size=nb, **kw)
            B = distributed.scatter(b if comm.Get_rank() == 0 else None, grid, block_size=nb)
            X = distributed.lu_solve((lu, piv), B, **kw)
            x = distributed.gather(X, root=None)
            assert same(x, want_x), f"{name} {shape}: the solutions differ"
            for trans in (1, "T"):
                want_t = la.lu_solve((want_lu, want_piv), b, trans=trans, block_size=nb, **kw)
                xt = distributed.gather(distributed.lu_solve((lu, piv), B, trans=trans, **kw),
                                        root=None)
                assert same(xt, want_t), f"{name} {shape}: the transposed solutions differ"
            # HPL's scaled residual (eps = 2**-53) for well-scaled matrices
            r = np.abs(A @ x - b).max() / (2.0 ** -53 * n * (
                np.abs(A).sum(axis=1).max() * np.abs(x).max() + np.abs(b).max()))
            assert r < 16, f"{name} {shape}: scaled residual {r}"
        if expect is not None:
            assert any(getattr(i, expect) for i in seen), f"{name}: no product had {expect}"
        if comm.Get_rank() == 0:
            print(f"ok {name} grid={shape} nb={nb} {A.shape} products={info.products} "
                  f"emulated={info.emulated_products} "
                  f"comm={info.seconds['communication']:.3f}s", flush=True)


rng = np.random.default_rng(30)
one = world.Split(0 if rank == 0 else MPI.UNDEFINED, 0)
two = world.Split(0 if rank < 2 else MPI.UNDEFINED, rank)
A = rng.standard_normal((157, 157))
# the emulated path on these small updates; the small-product path's cases come last
SMALL_WORK, compensated.SMALL_WORK = compensated.SMALL_WORK, 0
for shape in [(2, 2), (1, 4), (4, 1)]:
    case("square", A, shape, 16)
    case("square fast", A, shape, 24, mode="fast")
case("square", A, (1, 1), 16, sub=one)
case("square", A, (2, 1), 16, sub=two)
case("square", A, (1, 2), 16, sub=two)
case("int8", A, (2, 2), 32, scheme="int8")
case("tall", rng.standard_normal((157, 101)), (2, 2), 16)
case("wide", rng.standard_normal((90, 157)), (4, 1), 16)
case("one block", A[:40, :40], (2, 2), 64)
S = A.copy()
S[:, 37] = 0.0  # an exactly zero pivot: the same warning on every rank
case("singular", S, (2, 2), 16)
scaled = A * np.exp2(rng.integers(-30, 30, (157, 1)))
case("row scaled", scaled, (4, 1), 16)
ties = rng.integers(-2, 3, (157, 157)).astype(float)  # equal magnitudes on many ranks
ties[5:40:3] = -ties[4:39:3]
case("ties", ties, (4, 1), 16, rhs=0)
case("ties", ties, (2, 2), 8, rhs=0)
special = A.copy()
special[[3, 90, 91], [3, 3, 60]] = np.nan, np.inf, -np.inf
special[100:, 20] = -0.0
case("nan inf", special, (4, 1), 16, rhs=0, check_finite=False)
case("nan inf", special, (2, 2), 16, rhs=0, check_finite=False)
wide_rows = A * np.exp2(rng.integers(-200, 200, (157, 1)))  # rows over 2**+-200
case("row scaled int8", wide_rows, (2, 2), 16, scheme="int8", expect="fallback_entries")
case("row scaled refined", wide_rows, (1, 4), 16, scheme="int8", expect="refined_block")
case("row scaled fast", scaled, (1, 4), 16, mode="fast", scheme="int8")
wild = A * np.exp2(rng.integers(-200, 200, (1, 157)))  # columns over 2**+-200: fallbacks
case("column scaled int8", wild, (2, 2), 16, scheme="int8", num_moduli=10, fallback="exact",
     expect="fallback_entries")
case("column scaled fast", wild, (4, 1), 16, scheme="int8", mode="fast", num_moduli=12,
     fallback="exact", expect="fallback_entries")
compensated.SMALL_WORK = SMALL_WORK
for shape in [(2, 2), (1, 4), (4, 1)]:
    case("small products", A, shape, 16)
tiny = np.where(np.arange(157) >= 80, 2.0 ** -480, 1.0)  # products below 2**-900
case("small products underflow", A * tiny[:, None] * tiny, (2, 2), 16, expect="exact_entries")

# the native baseline (BLAS updates): its own bits, HPL's check passed
for shape in [(2, 2), (1, 4), (4, 1)]:
    with distributed.make_grid(shape) as grid:
        D = distributed.scatter(A if rank == 0 else None, grid, block_size=16)
        b = np.arange(157.0)[:, None] / 157
        B = distributed.scatter(b if rank == 0 else None, grid, block_size=16)
        lu, piv = distributed.lu.native_lu_factor(D)
        x = distributed.gather(distributed.lu.native_lu_solve((lu, piv), B), root=None)
        r = np.abs(A @ x - b).max() / (2.0 ** -53 * 157 * (
            np.abs(A).sum(axis=1).max() * np.abs(x).max() + np.abs(b).max()))
        assert r < 16, r
        if rank == 0:
            print(f"ok native grid={shape} residual={r:.3g}", flush=True)

# errors agreed before any collective
with distributed.make_grid((2, 2)) as grid:
    D = distributed.scatter(A if rank == 0 else None, grid, block_size=16)
    raises(TypeError, "CyclicMatrix", lambda: distributed.lu_factor(D.local))
    bad = distributed.CyclicMatrix(D.local.copy(), D.shape, grid, 16)
    if rank == 3:
        bad.local[0, 0] = np.nan
    raises(ValueError, "infs or NaNs", lambda: distributed.lu_factor(bad))
    raises(ValueError, "disagree", lambda: distributed.lu_factor(
        D, mode="fast" if rank == 1 else "accurate"))
    raises(TypeError, "unexpected keyword", lambda: distributed.lu_factor(D, colour=1))
    lu, piv = distributed.lu_factor(D)
    raises(ValueError, "trans must be", lambda: distributed.lu_solve((lu, piv), D, trans="X"))
    raises(ValueError, "disagree", lambda: distributed.lu_solve((lu, piv), D, trans=rank % 2))
    raises(ValueError, "piv must", lambda: distributed.lu_solve((lu, piv[:-1]), D))
    raises(ValueError, "block_size", lambda: distributed.scatter(
        A if rank == 0 else None, grid, block_size=0 if rank == 2 else 16))
if rank == 0:
    print("ALL OK", flush=True)
