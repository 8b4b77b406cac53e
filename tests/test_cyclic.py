"""The pieces of the distributed factorisations that run without MPI: the block-cyclic
index maps, composed row interchanges, and the distributed panel's steps on one rank
against the serial panel kernel (bit for bit)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ozaki.distributed.cyclic import cyclic_indices, owner
from ozaki.distributed.panel import factor_panel
from ozaki.distributed.rows import composed
from ozaki.distributed.traffic import Traffic
from ozaki.linalg import kernels


def same(a, b) -> bool:
    return a.shape == b.shape and np.array_equal(a.view(np.int64), b.view(np.int64))


@given(size=st.integers(0, 300), nb=st.integers(1, 40), parts=st.integers(1, 5))
def test_cyclic_indices_deal_every_index_once(size, nb, parts):
    held = [cyclic_indices(size, nb, parts, p) for p in range(parts)]
    together = np.sort(np.concatenate(held))
    assert np.array_equal(together, np.arange(size))
    for p, idx in enumerate(held):
        assert np.all(np.diff(idx) > 0)  # increasing: local order is global order
        for local, i in enumerate(idx):
            assert owner(int(i), nb, parts) == (p, local)
            assert (i // nb) % parts == p


@given(n=st.integers(1, 40), data=st.data())
def test_composed_interchanges_are_the_steps_in_order(n, data):
    first = data.draw(st.integers(0, n - 1))
    piv = np.array(data.draw(st.lists(st.integers(first, n - 1), max_size=n - first)))
    for reverse in (False, True):
        rows = list(range(n))
        steps = range(len(piv) - 1, -1, -1) if reverse else range(len(piv))
        for i in steps:
            a, b = first + i, int(piv[i])
            rows[a], rows[b] = rows[b], rows[a]
        moves = composed(piv, first, reverse)
        assert {r: s for r, s in enumerate(rows) if r != s} == moves


class _One:
    """A communicator of one rank (the panel's collectives, without MPI)."""

    def Get_size(self):
        return 1

    def Allgather(self, send, recv):
        recv[0] = send


def _panels():
    rng = np.random.default_rng(5)
    yield rng.standard_normal((70, 33))
    ties = rng.integers(-2, 3, (64, 24)).astype(float)
    ties[::2] = -ties[1::2]
    yield ties
    zero = rng.standard_normal((50, 20))
    zero[:, 7] = 0.0
    zero[10:, 3] = -0.0
    yield zero
    special = rng.standard_normal((40, 17))
    special[[3, 20, 30], [2, 2, 9]] = np.nan, np.inf, -np.inf
    yield special
    yield rng.standard_normal((16, 16)) * np.exp2(rng.integers(-500, 500, (16, 1)))


@pytest.mark.parametrize("group", [1, 5, 16, 64])
@pytest.mark.parametrize("index", range(5))
def test_panel_steps_are_the_serial_kernel_bits(group, index):
    P = list(_panels())[index]
    want, wpiv = P.copy(), np.zeros(P.shape[1], np.int32)
    with np.errstate(all="ignore"):
        wzero = kernels.lu_panel(want, 0, P.shape[1], wpiv)
        k = 40  # the panel's rows sit at positions k.. of the matrix
        got = np.ascontiguousarray(P)
        piv, zero = factor_panel(got, np.arange(k, k + P.shape[0]), k, _One(), Traffic(),
                                 group=group, kernel=False)
    assert same(got, want)
    assert np.array_equal(piv, wpiv + k)
    assert zero == (wzero + k if wzero >= 0 else -1)


@settings(max_examples=40, deadline=None)
@given(h=st.integers(1, 30), extra=st.integers(0, 20), group=st.integers(1, 8),
       seed=st.integers(0, 2 ** 32 - 1))
def test_panel_steps_match_the_kernel_on_random_shapes(h, extra, group, seed):
    rng = np.random.default_rng(seed)
    w = h
    P = rng.integers(-3, 4, (h + extra, w)).astype(float) * rng.choice(
        [1.0, 0.5, 2.0 ** -60, 0.0], (h + extra, 1))
    want, wpiv = P.copy(), np.zeros(w, np.int32)
    with np.errstate(all="ignore"):
        kernels.lu_panel(want, 0, w, wpiv)
        piv, _ = factor_panel(P, np.arange(h + extra), 0, _One(), Traffic(), group=group,
                              kernel=False)
    assert same(P, want) and np.array_equal(piv, wpiv)
