"""Run under ``mpiexec -n 4``: fft.distributed against serial fft, bit for bit.

Grids 1x1 (rank 0 alone), 1x4, 2x2, 4x1; shapes not divisible by the grid and with
fewer entries than ranks along an axis; every transform, norm, several axis orders
and layouts; non-finite values; exact traffic; the same errors on every rank.
"""

import numpy as np
from mpi4py import MPI

import fft
from fft import distributed as dfft
from fft.distributed.layout import block
from ozaki.distributed import make_grid
from ozaki.distributed.layout import agree
from mpi_checks import idle_barrier, raises, same

world = MPI.COMM_WORLD
rank = world.Get_rank()


def data(shape, complex_=True):
    """The same array on every rank (seeded by its shape), magnitudes over 2^+-29."""
    rng = np.random.default_rng(list(shape) + [int(complex_)])
    X = rng.standard_normal(shape) * np.exp(rng.uniform(-20, 20, shape))
    if complex_:
        X = X + 1j * rng.standard_normal(shape)
    return X


def kept(shape, P, Q, old, new, r):
    """Entries rank r holds both before and after an exchange."""
    a, b = block(shape, P, Q, old, r), block(shape, P, Q, new, r)
    return int(np.prod([max(0, min(x.stop, y.stop) - max(x.start, y.start))
                        for x, y in zip(a, b)]))


def check(name, grid, got, want, info=None, itemsize=16):
    whole = dfft.gather(got, root=None)
    assert whole.shape == want.shape and whole.dtype == want.dtype, (name, whole.dtype)
    bad = int(np.sum(whole.view(np.int64) != want.view(np.int64)))
    assert bad == 0, f"{name} on {grid}: {bad} of {want.size * 2} words differ"
    if info is not None:  # every byte sent is an entry that left its rank
        sent = grid.comm.allreduce(info.traffic.bytes)
        want_bytes, shape = 0, list(info_shapes[name])
        if name == "rfftn":  # exchanged after the real axis: half of it
            shape[2] = shape[2] // 2 + 1
        for axis, old, new in info.exchanges:
            assert axis in old and axis not in new
            want_bytes += sum(int(np.prod([s.stop - s.start for s in
                                           block(shape, grid.P, grid.Q, old, r)]))
                              - kept(shape, grid.P, grid.Q, old, new, r)
                              for r in range(grid.P * grid.Q)) * itemsize
        assert len(info.exchanges) == (grid.P > 1) + (grid.Q > 1)  # relabels not listed
        assert sent == want_bytes, (name, sent, want_bytes)


info_shapes = {}


def run(grid, shape):
    tag = f"{shape} grid={grid.P}x{grid.Q}"
    X = data(shape)
    R = data(shape, complex_=False)
    # c2c forward, two-exchange inverse, three-exchange inverse
    x = dfft.scatter(X, grid)
    Y, info = dfft.fftn(x, return_info=True)
    info_shapes["fftn"] = shape
    before = x.local.copy()
    check("fftn", grid, Y, fft.fftn(X), info)
    assert np.array_equal(x.local, before)  # the input is not modified
    assert Y.split == (1, 2), Y.split
    Yw = fft.fftn(X)
    back = dfft.ifftn(Y, axes=(2, 1, 0))
    assert back.split == (0, 1)
    check("ifftn(2,1,0)", grid, back, fft.ifftn(Yw, axes=(2, 1, 0)))
    check("ifftn", grid, dfft.ifftn(Y, norm="ortho"), fft.ifftn(Yw, norm="ortho"))
    # real input to fftn, other layouts and orders
    for split, axes in (((1, 2), (1, 2, 0)), ((2, 0), None), ((0, 2), (2, 0, 1))):
        xr = dfft.scatter(R, grid, split=split)
        check(f"fftn real {split} {axes}", grid, dfft.fftn(xr, axes=axes, norm="forward"),
              fft.fftn(R, axes=axes, norm="forward"))
    # r2c / c2r, even and odd real axis
    for sh in (shape, shape[:2] + (shape[2] + 1,)):
        Rs = data(sh, complex_=False)
        xr = dfft.scatter(Rs, grid)
        Z, info = dfft.rfftn(xr, return_info=True)
        info_shapes["rfftn"] = sh
        check("rfftn", grid, Z, fft.rfftn(Rs), info)
        Zw = fft.rfftn(Rs)
        s = (sh[1], sh[0], sh[2])  # along axes, as scipy
        got = dfft.irfftn(Z, s=s, axes=(1, 0, 2))
        assert got.split == (0, 1) and got.local.dtype == np.float64
        check("irfftn(1,0,2)", grid, got, fft.irfftn(Zw, s=s, axes=(1, 0, 2)))
        check("irfftn ortho", grid, dfft.irfftn(Z, s=s, axes=(1, 0, 2), norm="ortho"),
              fft.irfftn(Zw, s=s, axes=(1, 0, 2), norm="ortho"))
        check("irfftn s", grid, dfft.irfftn(Z, s=(-1, -1, sh[2])), fft.irfftn(Zw, s=sh))
        if sh[2] % 2 == 0:  # s=None: the even length 2 (m - 1)
            kept_z = Z.local.copy()
            check("irfftn default", grid, dfft.irfftn(Z), fft.irfftn(Zw))
            assert np.array_equal(Z.local, kept_z)  # DC/Nyquist dropped in a copy only
        # real input from another layout, the real axis not local at first
        xs = dfft.scatter(Rs, grid, split=(0, 2))
        check("rfftn (0, 2) axes (2, 0, 1)", grid, dfft.rfftn(xs, axes=(2, 0, 1)),
              fft.rfftn(Rs, axes=(2, 0, 1)))
    # non-finite entries propagate as serially
    Xn = X.copy()
    Xn[0, 0, 0], Xn[-1, 1 % shape[1], 0] = np.inf, np.nan
    check("fftn nonfinite", grid, dfft.fftn(dfft.scatter(Xn, grid)), fft.fftn(Xn))
    # every layout and back: values moved, not changed
    for split in ((0, 1), (1, 0), (1, 2), (2, 1), (2, 0), (0, 2)):
        moved = dfft.redistribute(x, split)
        assert moved.split == split
        check(f"redistribute {split}", grid, moved, X)
        check("and back", grid, dfft.redistribute(moved, (0, 1)), X)
    if rank == 0:
        print(f"ok {tag}", flush=True)


def errors(grid):
    x = dfft.scatter(data((5, 6, 4)), grid)
    r = dfft.scatter(data((5, 6, 4), complex_=False), grid)
    raises(TypeError, "must be real", lambda: dfft.rfftn(x))
    raises(ValueError, "permutation", lambda: dfft.fftn(x, axes=(0, 1)))
    raises(ValueError, "norm", lambda: dfft.fftn(x, norm="sideways"))
    raises(ValueError, "accurate", lambda: dfft.fftn(x, plan=[fft.get_plan(5), fft.get_plan(6),
                                                        fft.Plan(4, mode="accurate")]))
    raises(ValueError, "plan is for length", lambda: dfft.fftn(x, plan=fft.Plan(7)))
    raises(ValueError, "do not resize", lambda: dfft.irfftn(x, s=(5, 6, 9)))
    raises(ValueError, "do not resize", lambda: dfft.irfftn(x, s=(4, 6, 6)))
    raises(ValueError, "do not resize", lambda: dfft.irfftn(x, s=(5, 6, 6), axes=(1, 0, 2)))
    raises(ValueError, "distinct", lambda: dfft.scatter(np.zeros((2, 2, 2)), grid, (1, 1)))
    raises(ValueError, "3-D", lambda: dfft.scatter(np.zeros((2, 2)) if rank == 0 else None,
                                                    grid))
    raises(TypeError, "DistributedArray", lambda: dfft.fftn(np.zeros((2, 2, 2))))
    raises(ValueError, "root must be", lambda: dfft.scatter(np.zeros((2, 2, 2)), grid, root=9))

    def fails_on_rank_0():  # not a TypeError or ValueError: still heard everywhere
        if rank == 0:
            raise KeyError("boom")
        return 1
    raises(KeyError if rank == 0 else RuntimeError, "boom",
           lambda: agree(grid.comm, fails_on_rank_0))
    # ranks that disagree, or one rank's bad argument, fail everywhere (no hang)
    raises(ValueError, "disagree", lambda: dfft.fftn(x, axes=(0, 1, 2) if rank else (2, 1, 0)))
    raises(ValueError, "norm", lambda: dfft.fftn(x, norm="ortho" if rank else "bad"))
    raises(ValueError, "disagree", lambda: dfft.redistribute(r, (1, 2) if rank else (2, 1)))
    y = dfft.scatter(data((5, 6, 4)), grid)
    if rank == world.Get_size() - 1:
        y.local = y.local[:, :, :3]
    raises(ValueError, "must hold", lambda: dfft.ifftn(y))
    y = dfft.scatter(data((5, 6, 4)), grid)
    if rank == 0:
        y.local = y.local.astype(np.complex64)
    raises(TypeError, "complex128", lambda: dfft.fftn(y))
    if rank == 0:
        print(f"ok errors grid={grid.P}x{grid.Q}", flush=True)


if rank == 0:  # one rank alone: the serial path with its bookkeeping
    with make_grid((1, 1), MPI.COMM_SELF) as g:
        run(g, (3, 4, 5))
idle_barrier(world)
for shape in ((1, 4), (2, 2), (4, 1)):
    with make_grid(shape, world) as g:
        run(g, (6, 5, 7))
        run(g, (3, 9, 10))  # fewer planes than ranks along an axis: empty blocks
        errors(g)
with make_grid((2, 2), world) as g:
    run(g, (17, 12, 30))  # a prime length (one dense stage) and two-stage lengths
    X = data((2, 2, 12))  # one line per rank: a batch of width 1 (numpy would take gemv)
    check("fftn one line per rank", g, dfft.fftn(dfft.scatter(X, g)), fft.fftn(X))
    if rank == 0:
        print("ok one line per rank", flush=True)
