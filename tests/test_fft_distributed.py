"""fft.distributed's layout arithmetic (no MPI needed); the transforms themselves run
under ``mpiexec -n 4`` in tests/test_distributed.py (tests/mpi/check_fft.py)."""

import itertools

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from fft.distributed.layout import block, check_split
from fft.distributed.transpose import route

LAYOUTS = [(a, b) for a, b in itertools.permutations(range(3), 2)]


@settings(max_examples=60, deadline=None)
@given(shape=st.tuples(*[st.integers(1, 9)] * 3), P=st.integers(1, 5), Q=st.integers(1, 5),
       split=st.sampled_from(LAYOUTS))
def test_blocks_tile_the_array_once(shape, P, Q, split):
    hits = np.zeros(shape, np.int64)
    for r in range(P * Q):
        idx = block(shape, P, Q, split, r)
        hits[idx] += 1
        c = 3 - sum(split)
        assert idx[c] == slice(0, shape[c])  # the local axis is whole
        sizes = [s.stop - s.start for s in idx]
        for axis, parts in ((split[0], P), (split[1], Q)):  # even: lengths differ by <= 1
            assert shape[axis] // parts <= sizes[axis] <= -(-shape[axis] // parts)
    assert (hits == 1).all()


@pytest.mark.parametrize("start,goal", list(itertools.product(LAYOUTS, LAYOUTS)))
def test_route_reaches_the_layout_in_the_fewest_exchanges(start, goal):
    path = route(start, goal)
    here = start
    for axis in path:  # each step makes the axis local: it takes the local axis's place
        a, b = here
        c = 3 - a - b
        assert axis in here
        here = (c, b) if axis == a else (a, c)
    assert here == goal
    # the six layouts form a cycle of moves: distance at most 3, 0 only for the same one
    assert len(path) <= 3 and (len(path) == 0) == (start == goal)
    if start != goal and (start[0] == goal[0] or start[1] == goal[1]):
        assert len(path) == 1  # the other position takes the local axis: one exchange


@pytest.mark.parametrize("bad", [(0, 0), (0, 3), (-1, 1), (1,), "ab", None])
def test_split_must_be_two_distinct_axes(bad):
    with pytest.raises(ValueError, match="split"):
        check_split(bad)
