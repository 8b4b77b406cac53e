"""Run under ``mpiexec -n 4``: distributed.dgemm against serial ozaki.dgemm, bit for bit.

Prints one line per case on rank 0 and ``ALL OK`` at the end; any mismatch raises
(the exit status is non-zero and mpiexec stops the other ranks).
"""

import numpy as np
from mpi4py import MPI

import ozaki
from ozaki.core import compensated
from ozaki import distributed
from mpi_checks import same, raises

world = MPI.COMM_WORLD
rank = world.Get_rank()
# the emulated path on these small products; the small-product path's cases come last
SMALL_WORK, compensated.SMALL_WORK = compensated.SMALL_WORK, 0


def case(name, A, B, shape, sub=None, **kw):
    comm = world if sub is None else sub
    if comm == MPI.COMM_NULL:
        return
    grid = distributed.make_grid(shape, comm)
    dA = distributed.scatter(A if comm.Get_rank() == 0 else None, grid)
    dB = distributed.scatter(B if comm.Get_rank() == 0 else None, grid)
    want, winfo = ozaki.dgemm(A, B, return_info=True,
                              **{k: v for k, v in kw.items() if k != "panel"})
    C, info = distributed.dgemm(dA, dB, return_info=True, **kw)
    got = distributed.gather(C, root=None)
    on_root = distributed.gather(C, root=comm.Get_size() - 1)
    assert (on_root is None) == (comm.Get_rank() != comm.Get_size() - 1)
    assert on_root is None or same(on_root, want)
    assert same(got, want), f"{name} {shape}: {int((got != want).sum())} entries differ"
    for f in ("num_moduli", "gemms", "uncertified", "fallback", "fallback_entries",
              "fallback_block", "exact_entries", "max_bound_ratio", "bound_kind",
              "refined_block", "mode", "path"):
        assert getattr(info, f) == getattr(winfo, f), (name, shape, f, getattr(info, f),
                                                       getattr(winfo, f))
    if kw.get("bounds"):
        eb = distributed.gather(distributed.DistributedMatrix(info.error_bound, want.shape, grid),
                                root=None)
        assert same(eb, winfo.error_bound), f"{name}: bounds differ"
    if comm.Get_rank() == 0:
        print(f"ok {name} grid={shape} mode={info.mode} N={info.num_moduli} "
              f"refined={info.refined_block} fallback={info.fallback_entries}", flush=True)


rng = np.random.default_rng(12)
for mode in ("accurate", "fast"):
    A = rng.standard_normal((37, 53)) * np.exp2(rng.integers(-20, 20, (37, 1)))
    B = rng.standard_normal((53, 29))
    one = world.Split(0 if rank == 0 else MPI.UNDEFINED, 0)
    for shape in [(2, 2), (1, 4), (4, 1)]:
        for panel in (5, 512):
            case(f"normal panel={panel}", A, B, shape, panel=panel, mode=mode)
    case("normal", A, B, (1, 1), sub=one, mode=mode)
    case("more ranks than rows", A[:3], B, (4, 1), mode=mode)
    case("int8", A, B, (2, 2), scheme="int8", panel=16, mode=mode)
    case("fp8 on its engine", A, B, (2, 2), scheme="fp8", engine="cpu-fp8", mode=mode)
    case("explicit count", A, B, (2, 2), num_moduli=4, mode=mode)
    wide = np.exp2(rng.integers(-60, 60, (53, 29))) * rng.standard_normal((53, 29))
    case("fallback", A, wide, (2, 2), num_moduli=2, fallback="exact", panel=8, mode=mode)
    case("bounds", A, B, (1, 4), bounds=True, mode=mode)
    S = A.copy(); S[3, 5] = np.inf; S[10, 0] = np.nan
    case("non-finite", S, B, (2, 2), mode=mode)
    H = A.copy(); H[0] = 1e300
    case("overflow guard", H, B * 1e10, (2, 2), mode=mode)
    case("empty", A[:, :0], B[:0], (2, 2), mode=mode)
    P = rng.standard_normal((40, 40)); Q = rng.standard_normal((40, 40))
    rows, cols = rng.choice(40, 3, replace=False), rng.choice(40, 4, replace=False)
    P[rows] = np.eye(40)[rows] * np.exp2(rng.integers(-30, 30, (3, 1)))
    Q[:, cols] = np.eye(40)[:, cols]  # identity lines: a refined block inside the product
    for scheme in ("fp64", "int8"):
        case(f"partial refinement {scheme}", P, Q, (2, 2), scheme=scheme, panel=9, mode=mode)
    I = np.eye(40) * np.exp2(rng.integers(-30, 30, 40))[:, None]  # structural zeros
    case("refinement", I, np.eye(40) + np.diag(np.full(39, 1e-9), 1), (2, 2), scheme="fp8",
         engine="cpu-fp8", panel=7, mode=mode)
    try:
        distributed.make_grid((3, 1), world)
    except ValueError as exc:
        assert "needs 3 processes" in str(exc)
    else:
        raise AssertionError("a 3 x 1 grid on 4 ranks was accepted")

compensated.SMALL_WORK = SMALL_WORK  # the small-product path, as serial takes it
for mode in ("accurate", "fast"):
    for shape in [(2, 2), (1, 4), (4, 1)]:
        case("compensated", A, B, shape, mode=mode)
    case("compensated bounds", A, B, (2, 2), bounds=True, mode=mode)
    case("compensated non-finite", S, B, (2, 2), bounds=True, mode=mode)
    case("compensated exact entries", H, B * 1e10, (2, 2), mode=mode)  # near overflow
    T = A.copy(); T[2] *= 2.0 ** -1000  # products below 2**-900: the exact dot product
    case("compensated tiny", T, B, (1, 4), mode=mode)
    case("compensated tiny kept", T, B, (2, 2), mode=mode, fallback="none", bounds=True)
    grid = distributed.make_grid((2, 2), world)
    dT, dB = (distributed.scatter(X if rank == 0 else None, grid) for X in (T, B))
    raises(ozaki.core.certify.CertificationError, "the first is C[2, 0]",
           lambda: distributed.dgemm(dT, dB, fallback="raise", mode=mode))
    case("compensated empty", A[:, :0], B[:0], (2, 2), mode=mode)
_, info = ozaki.dgemm(A, B, return_info=True)
assert info.path == "compensated", info.path

grid = distributed.make_grid((2, 2), world)
dA = distributed.scatter(A if rank == 0 else None, grid)
dB = distributed.scatter(B[:50] if rank == 0 else None, grid)
raises(ValueError, "inner dimensions differ", lambda: distributed.dgemm(dA, dB))
dB = distributed.scatter(B if rank == 0 else None, grid)
raises(ValueError, "mode", lambda: distributed.dgemm(dA, dB, mode="exact"))
raises(ValueError, "panel must be", lambda: distributed.dgemm(dA, dB, panel=0))
other = distributed.make_grid((1, 4), world)
dB14 = distributed.scatter(B if rank == 0 else None, other)
raises(ValueError, "grid, B on 1 x 4", lambda: distributed.dgemm(dA, dB14))
raises(TypeError, "DistributedMatrix", lambda: distributed.dgemm(A, dB))
# one rank's bad argument, or ranks that disagree, raise on every rank (no rank hangs)
raises(ValueError, "panel must be", lambda: distributed.dgemm(dA, dB, panel=0 if rank == 1 else 8))
raises(ValueError, "disagree", lambda: distributed.dgemm(dA, dB, panel=5 if rank == 2 else 8))
raises(TypeError, "DistributedMatrix",
       lambda: distributed.dgemm(A if rank == 3 else dA, dB))
raises(ValueError, "scheme", lambda: distributed.dgemm(dA, dB, scheme="int4" if rank == 0
                                                      else "auto"))
with distributed.make_grid((2, 2), world) as g:
    assert g.row is not None
assert g.row is None and g.col is None  # freed on leaving the block
shape = (8, 8) if rank == 0 else (12, 8)  # the ranks disagree on the global shape
r = distributed.bounds(shape[0], 2)
mixed = distributed.DistributedMatrix(np.zeros((r[grid.p + 1] - r[grid.p], 4)), shape, grid)
raises(ValueError, "disagree", lambda: distributed.dgemm(mixed, mixed))
raises(ValueError, "must hold a", lambda: distributed.DistributedMatrix(np.zeros((1, 1)),
                                                                        (8, 8), grid))
if rank == 0:
    raises(TypeError, "must be", lambda: distributed.scatter("x", grid))
else:
    raises(TypeError, "must be", lambda: distributed.scatter(None, grid))
if rank == 0:
    print("ALL OK", flush=True)
