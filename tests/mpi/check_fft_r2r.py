"""Run under ``mpiexec -n 4``: fft.distributed's dctn / dstn / idctn / idstn against the
serial transforms on the root, bit for bit.

Grids 1x1 (rank 0 alone), 1x4, 4x1 (slabs) and 2x2 (pencils); shapes not divisible by
the grid, with lengths below and above 16 along every axis and fewer planes than ranks
(empty blocks); every function, type and norm; orthogonalize against the norm's
default; complex input; data near overflow, where the serial transform scales by the
whole array's largest magnitude (the ranks agree on it); ``inf`` and ``nan``; the
two-exchange round trip; the exchanges and the peaks' traffic; the serial errors on
every rank. The serial results are computed once per case on the root.
"""

import itertools

import numpy as np
from mpi4py import MPI

import fft
from fft import distributed as dfft
from ozaki.distributed import make_grid
from mpi_checks import idle_barrier, raises, same

world = MPI.COMM_WORLD
rank = world.Get_rank()
FUNCS = ("dctn", "idctn", "dstn", "idstn")
NORMS = ("backward", "ortho", "forward")
#: lengths below and above 16 along each axis, odd and even; 3 planes: empty blocks
SHAPES = ((18, 5, 17), (7, 20, 6), (3, 17, 4))
serial = {}  # (case) -> the serial result, on the root


def data(shape, profile):
    """The same array on every rank (seeded by its shape): ``"normal"``, ``"complex"``,
    ``"range"``, ``"nonfinite"``.

    ``"range"``: tiny values (``1e-306``) and one constant plane near overflow
    (``1e306``) at the end of axis 0. The serial transform scales every step by a power
    of two for that plane, which pushes the tiny values into the subnormals; the
    transforms of a constant plane along axes 2 and 1 are exactly zero but at one
    entry (types 1 and 2: the mirrored extension's DFT is sparse), so the tiny values
    are not swamped at the last step and their scaled bits show in the result. On the
    4x1 and 2x2 grids the ranks without that plane find the scale only through the
    agreed peaks: a distributed version with each rank's own peaks differs here.
    """
    rng = np.random.default_rng(list(shape) + [len(profile)])
    X = rng.standard_normal(shape) * np.exp(rng.uniform(-20, 20, shape))
    if profile == "complex":
        X = X + 1j * rng.standard_normal(shape)
    elif profile == "range":
        X = rng.standard_normal(shape) * 1e-306
        X[-1] = 1e306
    elif profile == "nonfinite":
        X[0, 0, 0], X[-1, 1, 2] = np.inf, np.nan
    return X


def check(grid, shape, profile, name, split=(0, 1), want_split=(1, 2), **kw):
    """``name`` of the scattered data against serial ``fft.name`` on the root."""
    X = data(shape, profile)
    x = dfft.scatter(X if rank == 0 else None, grid, split=split)
    before = x.local.copy()
    Y, info = getattr(dfft, name)(x, return_info=True, **kw)
    assert same(x.local, before)  # the input is not modified
    assert Y.split == want_split, (name, Y.split)
    assert len(info.exchanges) == (grid.P > 1) + (grid.Q > 1)  # relabels not listed
    s = grid.P * grid.Q  # one all-reduce of the axis's length per axis
    assert info.traffic.by_kind["range"] == ((s - 1) * 8 * sum(shape), 3 * (s - 1))
    whole = dfft.gather(Y)
    if rank == 0:
        key = (shape, profile, name, tuple(sorted(kw.items())))
        if key not in serial:
            serial[key] = getattr(fft, name)(X, **kw)
        want = serial[key]
        assert whole.dtype == want.dtype, (name, whole.dtype)
        bad = int(np.sum(whole.view(np.int64) != want.view(np.int64)))
        assert bad == 0, f"{name} {kw} {shape} {profile} on {grid.P}x{grid.Q}: {bad} differ"
    idle_barrier(grid.comm)  # the others sleep while the root computes
    return Y


def run(grid):
    # every function and type along lengths above and below 16 (SHAPES[0] and [1]
    # swap them; SHAPES[0] has a mirrored and a reduced length for the range scale);
    # the norms rotate so that every type meets every norm
    for shape in SHAPES[:2]:
        for i, (name, t) in enumerate(itertools.product(FUNCS, range(1, 5))):
            check(grid, shape, "normal", name, type=t, norm=NORMS[i % 3])
            if shape == SHAPES[0]:
                check(grid, shape, "range", name, type=t, norm=NORMS[(i + 1) % 3])
    for i, name in enumerate(FUNCS):  # empty blocks
        check(grid, SHAPES[2], "normal", name, type=i + 1, norm=NORMS[i % 3])
    shape = SHAPES[0]
    check(grid, shape, "range", "dctn", type=1, norm="ortho", orthogonalize=False)
    check(grid, shape, "range", "idstn", type=3, orthogonalize=True)
    check(grid, shape, "nonfinite", "dstn", type=4)
    check(grid, shape, "nonfinite", "idctn", type=2, norm="ortho")
    # complex input, another layout and order; the round trip back to (0, 1)
    check(grid, shape, "complex", "dstn", split=(2, 0), axes=(2, 0, 1), want_split=(0, 1),
          type=3)
    Y = check(grid, SHAPES[1], "normal", "dctn", type=2, norm="ortho")
    back = dfft.idctn(Y, type=2, axes=(2, 1, 0), norm="ortho")
    assert back.split == (0, 1)
    whole = dfft.gather(back)
    if rank == 0:
        Yw = fft.dctn(data(SHAPES[1], "normal"), type=2, norm="ortho")
        assert same(whole, fft.idctn(Yw, type=2, axes=(2, 1, 0), norm="ortho"))
        print(f"ok grid={grid.P}x{grid.Q}", flush=True)


def errors(grid):
    x = dfft.scatter(data((5, 6, 4), "normal"), grid)
    one = dfft.scatter(np.ones((5, 1, 4)), grid)
    raises(ValueError, "invalid DCT type", lambda: dfft.dctn(x, type=5))
    raises(ValueError, "invalid DST type", lambda: dfft.idstn(x, type=0))
    raises(TypeError, "type must be an integer", lambda: dfft.dstn(x, type=2.5))
    raises(ValueError, "norm", lambda: dfft.dctn(x, norm="sideways"))
    raises(ValueError, "permutation", lambda: dfft.dctn(x, axes=(0, 1)))
    raises(RuntimeError, "at least 2 points", lambda: dfft.dctn(one, type=1))
    raises(TypeError, "DistributedArray", lambda: dfft.dstn(np.zeros((2, 2, 2))))
    # one rank's bad argument, or ranks that disagree, fail everywhere (no hang)
    raises(ValueError, "invalid DCT type", lambda: dfft.dctn(x, type=5 if rank == 1 else 2))
    raises(ValueError, "disagree", lambda: dfft.dctn(x, type=1 if rank else 2))
    raises(ValueError, "disagree", lambda: dfft.dstn(x, orthogonalize=rank == 0))
    if rank == 0:
        print(f"ok errors grid={grid.P}x{grid.Q}", flush=True)


if rank == 0:  # one rank alone: the serial path with its bookkeeping
    with make_grid((1, 1), MPI.COMM_SELF) as g:
        run(g)
idle_barrier(world)
for grid_shape in ((1, 4), (2, 2), (4, 1)):
    with make_grid(grid_shape, world) as g:
        run(g)
        errors(g)
    idle_barrier(world)
if rank == 0:
    print("ALL OK", flush=True)
