"""Accurate mode's choice between refining a block and taking more moduli.

With ``num_moduli="auto"``, a slice whose coarse bound fails at the start count ``s``
refines the block of its failing rows and columns (``nr x nc`` of ``m x n``) when
``price * nr * nc <= extra * m * n``, ``extra`` being the moduli the coarse bound needs
above ``s`` (:data:`ozaki.core.moduli.REFINEMENT_PRICE`; always when no count certifies).
The price is part of the results (``MODULI_VERSION`` 2): each case is checked against
the two outcomes computed on their own (refinement forced, refinement refused).
"""

from __future__ import annotations

import numpy as np
import pytest

import ozaki
from ozaki.core import moduli

NEVER, ALWAYS = 10 ** 9, 0


def _spread(rng, shape, rows=None):
    """``N(0, 1) exp(N(0, 1))`` entries on ``rows`` (every row by default), else ``N(0, 1)``."""
    X = rng.standard_normal(shape)
    wide = X * np.exp(rng.standard_normal(shape))
    if rows is None:
        return wide
    X[rows] = wide[rows]
    return X


def _run(A, B, scheme, price, monkeypatch):
    monkeypatch.setitem(moduli.REFINEMENT_PRICE, scheme, price)
    return ozaki.dgemm(A, B, scheme=scheme, mode="accurate", bounds=True, return_info=True)


@pytest.mark.parametrize("scheme, pattern, size", [
    ("int8", "whole", 300), ("int8", "few rows", 300), ("int7", "whole", 300),
    ("int7", "few rows", 300), ("fp8", "whole", 300), ("fp64", "whole", 400)])
def test_the_price_decides_between_refinement_and_moduli(scheme, pattern, size, monkeypatch):
    """int8 and int7: the whole product's failing block takes moduli, a few rows' refine;
    fp8's coarse bound (4-bit floors) certifies at no count here, so it refines; fp64
    refines the one entry its coarse bound misses, at the same price as in version 1."""
    rng = np.random.default_rng(5)
    m = k = n = size
    rows = None if pattern == "whole" else [3, 70, 141, 299]
    A, B = _spread(rng, (m, k), rows), _spread(rng, (k, n))
    price = moduli.REFINEMENT_PRICE[scheme]
    (Cn, never), (Ca, always) = (_run(A, B, scheme, p, monkeypatch) for p in (NEVER, ALWAYS))
    (C, info) = _run(A, B, scheme, price, monkeypatch)
    start = ozaki.auto_num_moduli(scheme, k)
    assert always.refined_block != (0, 0)  # the coarse bound fails at the start count
    nr, nc = always.refined_block
    if never.refined_block != (0, 0):  # no count certifies the coarse bound: refine
        refine = True
    else:
        refine = price * nr * nc <= (never.num_moduli - start) * m * n
    want_C, want = (Ca, always) if refine else (Cn, never)
    assert info.refined_block == want.refined_block and info.num_moduli == want.num_moduli
    assert C.tobytes() == want_C.tobytes()
    assert info.error_bound.tobytes() == want.error_bound.tobytes()
    assert info.uncertified == 0


def test_low_precision_schemes_take_moduli_where_a_whole_product_fails(monkeypatch):
    """Spread entries: int8's coarse bound fails on most of the product at the start count
    and needs a few more moduli. Version 1 priced the refinement at fp64's two moduli and refined
    the block in FP64; version 2 takes the moduli, and no FP64 GEMM."""
    rng = np.random.default_rng(1)
    A, B = _spread(rng, (300, 300)), _spread(rng, (300, 300))
    price = moduli.REFINEMENT_PRICE["int8"]
    C1, v1 = _run(A, B, "int8", 2, monkeypatch)
    C2, v2 = _run(A, B, "int8", price, monkeypatch)
    assert v1.refined_block != (0, 0) and v2.refined_block == (0, 0)
    # one more INT8 GEMM a modulus, no FP64 GEMM: gemms counts the bound GEMM and both
    assert v2.num_moduli > v1.num_moduli and v2.gemms == v2.num_moduli + 1
    assert v1.gemms > v1.num_moduli + 1
    assert v2.max_bound_ratio <= 1 and v2.uncertified == 0


def test_a_slice_that_no_count_certifies_still_refines(monkeypatch):
    """``A = B = I``: the coarse bound cannot see the structural zeros at any count, so
    the refinement runs whatever its price (``extra`` is then infinite)."""
    eye = np.eye(64)
    _, info = _run(eye, eye, "int8", moduli.REFINEMENT_PRICE["int8"], monkeypatch)
    assert info.refined_block != (0, 0) and info.uncertified == 0


def test_the_prices_are_versioned():
    assert ozaki.MODULI_VERSION == 2
    assert moduli.REFINEMENT_PRICE == {"int8": 8, "fp8": 8, "fp64": 2, "int7": 8}
    assert set(moduli.REFINEMENT_PRICE) == set(ozaki.SCHEMES)
