"""Run under ``mpiexec -n 4``: ozaki.distributed.update.product (each rank holds whole
rows of A and whole columns of B) against serial ozaki.gemm / zgemm at the rank's
entries, bit for bit, with the info the ranks agree on; real and complex, both modes,
the small-product path, refinement and fallbacks.

Prints one line per case on rank 0 and ``ALL OK`` at the end.
"""

import numpy as np
from mpi4py import MPI

import ozaki
from ozaki import distributed
from ozaki.api.calls import options
from ozaki.core import compensated
from ozaki.core.kind import COMPLEX, REAL
from ozaki.distributed.cyclic import cyclic_indices
from ozaki.distributed.traffic import Traffic
from ozaki.distributed.update import product
from mpi_checks import same

world = MPI.COMM_WORLD
rank = world.Get_rank()


def case(name, A, B, shape, nb, **kw):
    kind = COMPLEX if np.iscomplexobj(A) or np.iscomplexobj(B) else REAL
    serial = ozaki.zgemm if kind.complex else ozaki.dgemm
    want, winfo = serial(A, B, return_info=True, **kw)
    opts = options(kw.get("scheme", "auto"), kw.get("num_moduli", "auto"),
                   kw.get("mode", "accurate"), "auto", kw.get("fallback"), False)
    with distributed.make_grid(shape) as grid:
        rows = cyclic_indices(A.shape[0], nb, grid.P, grid.p)
        cols = cyclic_indices(B.shape[1], nb, grid.Q, grid.q)
        X, info = product(np.ascontiguousarray(A[rows]), np.ascontiguousarray(B[:, cols]),
                          rows, cols, (A.shape[0], B.shape[1], A.shape[1]), grid, opts, kind,
                          Traffic())
        assert same(X, np.ascontiguousarray(want[np.ix_(rows, cols)])), f"{name} {shape}"
        for f in ("num_moduli", "uncertified", "fallback_entries", "fallback_block",
                  "exact_entries", "refined_block", "path", "scheme"):
            assert getattr(info, f) == getattr(winfo, f), (name, shape, f, getattr(info, f),
                                                           getattr(winfo, f))
    if rank == 0:
        print(f"ok {name} grid={shape} path={info.path} scheme={info.scheme} N={info.num_moduli} "
              f"refined={info.refined_block} fallback={info.fallback_entries} "
              f"exact={info.exact_entries}", flush=True)


rng = np.random.default_rng(7)
A = rng.standard_normal((45, 24)) * np.exp2(rng.integers(-30, 30, (45, 1)))
B = rng.standard_normal((24, 38))
Z = A + 1j * rng.standard_normal(A.shape)
W = B - 1j * rng.standard_normal(B.shape)
wide = A * np.exp2(rng.integers(-200, 200, (1, 24)))
SMALL_WORK, compensated.SMALL_WORK = compensated.SMALL_WORK, 0  # the emulated path
for shape in [(2, 2), (1, 4), (4, 1)]:
    for mode in ("accurate", "fast"):
        case(f"real {mode}", A, B, shape, 5, mode=mode)
        case(f"complex {mode}", Z, W, shape, 7, mode=mode)
    case("refined", wide, B, shape, 4, scheme="int8")
    case("fallback fast", wide, B, shape, 6, scheme="int8", mode="fast", num_moduli=12,
         fallback="exact")
    case("complex fallback", wide + 0j, W, shape, 6, scheme="int8", num_moduli=10,
         fallback="exact")
# a column spread that B undoes: no count of the machine's scheme certifies it (nor
# fp64's), so where the machine chose int8 or int7 the product is decided again in
# fp64 (ozaki.core.pipeline.widened), and every entry falls back to the exact dot
spread = np.exp2(rng.integers(-200, 200, 24))
case("machine scheme widened", A * spread, B / spread[:, None], (2, 2), 4)
compensated.SMALL_WORK = SMALL_WORK
tiny = np.where(np.arange(45) >= 20, 2.0 ** -480, 1.0)
for shape in [(2, 2), (4, 1)]:
    case("small", A, B, shape, 5)
    case("small complex", Z, W, shape, 5)
    case("small underflow", A * tiny[:, None], B * 2.0 ** -480, shape, 5)
    case("small underflow complex", Z * tiny[:, None], W * 2.0 ** -480, shape, 5)
if rank == 0:
    print("ALL OK", flush=True)
