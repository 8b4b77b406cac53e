"""Run under ``mpiexec -n 4``: distributed.zgemm against serial ozaki.zgemm, bit for bit."""

import numpy as np
from mpi4py import MPI

import ozaki
from ozaki.core import compensated
from ozaki import distributed
from mpi_checks import same

world = MPI.COMM_WORLD
rank = world.Get_rank()
# the emulated path on these small products; the small-product path's cases come last
SMALL_WORK, compensated.SMALL_WORK = compensated.SMALL_WORK, 0
# the fp64 scheme for the whole run (the counts the launcher checks are fp64's; "auto"
# would follow the machine): a block that lasts until the interpreter exits (the
# manager is kept: collecting it would end the block)
FP64 = ozaki.set_scheme("fp64")
FP64.__enter__()


def case(name, A, B, shape, **kw):
    grid = distributed.make_grid(shape, world)
    dA = distributed.scatter(A if rank == 0 else None, grid)
    dB = distributed.scatter(B if rank == 0 else None, grid)
    want, winfo = ozaki.zgemm(A, B, return_info=True,
                              **{k: v for k, v in kw.items() if k != "panel"})
    C, info = distributed.zgemm(dA, dB, return_info=True, **kw)
    got = distributed.gather(C, root=None)
    assert got.dtype == np.complex128
    assert same(got, want), f"{name} {shape}: {int((got != want).sum())} entries differ"
    for f in ("num_moduli", "gemms", "uncertified", "fallback", "fallback_entries",
              "fallback_block", "exact_entries", "max_bound_ratio", "bound_kind",
              "refined_block", "path"):
        assert getattr(info, f) == getattr(winfo, f), (name, f, getattr(info, f),
                                                       getattr(winfo, f))
    if kw.get("bounds"):
        eb = distributed.gather(distributed.DistributedMatrix(info.error_bound, want.shape,
                                                              grid), root=None)
        assert same(eb, winfo.error_bound), f"{name}: bounds differ"
    if rank == 0:
        print(f"ok {name} grid={shape} mode={info.mode} N={info.num_moduli} "
              f"gemms={info.gemms} refined={info.refined_block} "
              f"fallback={info.fallback_entries}", flush=True)


rng = np.random.default_rng(7)
A = (rng.standard_normal((23, 31)) + 1j * rng.standard_normal((23, 31))) \
    * np.exp2(rng.integers(-15, 15, (23, 1)))
B = rng.standard_normal((31, 19)) + 1j * rng.standard_normal((31, 19))
X = rng.standard_normal((31, 19))
for mode in ("accurate", "fast"):
    for shape in [(2, 2), (1, 4), (4, 1)]:
        case("complex", A, B, shape, panel=6, mode=mode)
    case("real B taken as complex", A, X, (2, 2), mode=mode)
    Z = A.copy(); Z[:, 1] = 1j * Z[:, 0]  # Re(AB) cancels in part
    case("cancellation", Z, np.vstack([B[:1], B[:1], B[2:]]), (2, 2), mode=mode)
    case("bounds", A, B, (1, 4), bounds=True, mode=mode)
    wide = np.exp2(rng.integers(-60, 60, (31, 19))) * B
    case("fallback", A, wide, (2, 2), num_moduli=2, fallback="exact", panel=4, mode=mode)
    S = A.copy(); S[2, 3] = complex(np.inf, 1.0); S[5, 0] = complex(0.0, np.nan)
    case("non-finite", S, B, (2, 2), mode=mode)
compensated.SMALL_WORK = SMALL_WORK  # the small-product path, as serial takes it
for mode in ("accurate", "fast"):
    for shape in [(2, 2), (4, 1)]:
        case("compensated", A, B, shape, mode=mode)
    case("compensated real B", A, X, (1, 4), mode=mode)
    case("compensated bounds", A, B, (2, 2), bounds=True, mode=mode)
    case("compensated non-finite", S, B, (2, 2), mode=mode)
_, info = ozaki.zgemm(A, B, return_info=True)
assert info.path == "compensated", info.path
grid = distributed.make_grid((2, 2), world)
dA = distributed.scatter(A if rank == 0 else None, grid)
dB = distributed.scatter(B if rank == 0 else None, grid)
try:
    distributed.dgemm(dA, dB)
except TypeError as exc:
    assert "zgemm" in str(exc)
else:
    raise AssertionError("dgemm took complex blocks")
if rank == 0:
    print("ALL OK", flush=True)
