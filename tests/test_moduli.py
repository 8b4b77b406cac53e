"""The moduli tables and the CRT constants: every exactness claim of ozaki.core.moduli."""

import math

import numpy as np
import pytest
import sympy

from ozaki.core.moduli import (ETA, MODULI, SCHEMES, auto_num_moduli, crt_plan, fp64_kblock,
                          half_range)


@pytest.mark.parametrize("scheme", SCHEMES)
def test_moduli_pairwise_coprime(scheme):
    ms = MODULI[scheme]
    assert len(ms) == (24 if scheme == "int7" else 20) == len(set(ms))
    for i, p in enumerate(ms):
        for q in ms[i + 1:]:
            assert math.gcd(p, q) == 1, (p, q)


def test_fp64_primes_are_the_largest_exact_ones():
    kb = fp64_kblock()
    ms = MODULI["fp64"]
    assert all(sympy.isprime(p) for p in ms)
    assert all(kb * ((p - 1) // 2) ** 2 <= 2 ** 53 for p in ms)
    # no larger prime satisfies the bound, and no prime in between is skipped
    h = math.isqrt(2 ** 53 // kb)
    assert kb * (h + 1) ** 2 > 2 ** 53
    assert not list(sympy.primerange(ms[0] + 1, 2 * h + 2))
    assert list(ms) == sorted(sympy.primerange(ms[-1], ms[0] + 1), reverse=True)


def test_fp8_moduli_have_fp8_digits():
    for p in MODULI["fp8"]:
        s = math.isqrt(p)
        assert s * s == p and s <= 33 or p <= 511


@pytest.mark.parametrize("scheme", SCHEMES)
@pytest.mark.parametrize("n", [2, 3, 6, 13, 16, 20])
def test_crt_plan_levels_are_exact_and_bounded(scheme, n):
    plan = crt_plan(scheme, n)
    P = math.prod(MODULI[scheme][:n])
    assert plan.P == P
    b = plan.bits_per_level
    assert (plan.rho + 1) * 2 ** b <= 2 ** 53
    # each weight is congruent to the CRT idempotent, up to the dropped tail
    g_top = P.bit_length() - b
    total_tail = 0
    for i, p in enumerate(plan.moduli):
        parts = [int(x) for x in plan.weights[i]]
        assert all(float(x) == x for x in plan.weights[i])
        for lv, part in enumerate(parts):
            g = g_top - lv * b
            if g >= 0:
                assert part % 2 ** g == 0
                assert abs(part) // 2 ** g <= 2 ** (b - 1)
        w = (P // p) * pow(P // p, -1, p) % P
        w = w - P if w > P // 2 else w
        total_tail += abs(w - sum(parts)) * (p // 2)
        assert abs(w - sum(parts)) < 2 ** max(g_top - (plan.levels - 1) * b, 0)
    pl = [int(x) for x in plan.p_levels]
    total_tail += abs(P - sum(pl)) * (plan.rho // 2 + 1)
    assert plan.tail >= total_tail
    # the tail is far below the truncation error (see the level rule)
    assert 2 * total_tail < 1  # C' is recovered exactly
    # H is a safe FP64 bound for the symmetric range with margin
    assert plan.H <= math.floor(P * (1 - ETA) / 2)
    assert plan.rho * 2.0 ** -49 < ETA / 2


@pytest.mark.parametrize("p", [256, 255, 1089, 1024, 511, 2965819])
def test_half_range(p):
    lo, hi = half_range(p)
    assert hi - lo + 1 == p and -lo in (hi, hi + 1)


def test_auto_counts():
    assert [auto_num_moduli(s, 4096) for s in ("int8", "fp8", "fp64")] == [16, 13, 6]
    assert [auto_num_moduli(s, 256) for s in ("int8", "fp8", "fp64")] == [16, 13, 6]
    assert auto_num_moduli("fp8", 65536) == 14
    ks = [1, 2 ** 10, 2 ** 14, 2 ** 17, 2 ** 20, 2 ** 30]
    for s in SCHEMES:
        counts = [auto_num_moduli(s, k) for k in ks]
        assert counts == sorted(counts) and counts[-1] <= len(MODULI[s])
    assert np.all(np.diff([auto_num_moduli("int8", 2 ** e) for e in range(31)]) >= 0)
