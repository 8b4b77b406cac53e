"""Adversarial reproducers: certificate holes, special values, determinism, arguments.

Each test here failed before the fixes it names (issue "Reliability: close the
certificate and special-value holes found by adversarial testing").
"""

from fractions import Fraction

import numpy as np
import pytest

import ozaki
from ozaki.backends.engines import BlasEngine, FP8Engine, Int8Engine


def bits(C):
    return np.asarray(C).view(np.int64)


# -- 4. every decision input is exact on every engine ------------------------

def test_blas_engine_is_exact_for_float32_operands_beyond_the_fp32_bound():
    # the accurate-mode bound GEMM passes float32 planes; at k > 2**24 / 225 its
    # exact sums exceed 2**24 and an SGEMM would round them
    k = 2 ** 17
    rng = np.random.default_rng(4)
    X = rng.integers(12, 16, (3, k)).astype(np.float32)
    Y = rng.integers(12, 16, (k, 3)).astype(np.float32)
    exact = X.astype(np.int64) @ Y.astype(np.int64)
    assert exact.max() > 2 ** 24
    for eng in (BlasEngine(), FP8Engine(), Int8Engine()):
        G = eng.matmul(X, Y, 15, 15)
        assert G.dtype == np.float64
        assert np.array_equal(G, exact.astype(np.float64)), eng


@pytest.mark.slow
def test_engines_agree_bitwise_at_large_k():
    # magnitudes whose floors are all large: the bound GEMM's sums need > 24 bits
    k = 2 ** 17
    rng = np.random.default_rng(44)
    A = rng.uniform(0.5, 1.0, (6, k)) * rng.choice([-1.0, 1.0], (6, k))
    B = rng.uniform(0.5, 1.0, (k, 5))
    ref = ozaki.dgemm(A, B, scheme="fp8", num_moduli=14, engine="cpu-blas")
    C = ozaki.dgemm(A, B, scheme="fp8", num_moduli=14, engine="cpu-fp8")
    assert np.array_equal(bits(C), bits(ref))


# -- 6. argument checks -------------------------------------------------------

@pytest.fixture
def AB(rng):
    return rng.standard_normal((4, 6)), rng.standard_normal((6, 3))


@pytest.mark.parametrize("flag", ["N", "n", False, np.False_])
def test_trans_letters_n_do_not_transpose(AB, flag):
    A, B = AB
    C = ozaki.gemm(A, B, trans_a=flag, trans_b=flag)
    assert np.array_equal(C, ozaki.dgemm(A, B))


@pytest.mark.parametrize("flag", ["T", "t", "C", "c", True])
def test_trans_letters_t_and_c_transpose(AB, flag):
    A, B = AB
    C = ozaki.gemm(A.T, B.T, trans_a=flag, trans_b=flag)
    assert np.array_equal(C, ozaki.dgemm(A, B))


@pytest.mark.parametrize("flag", ["yes", "", "NT", 1, 0, None, 1.0])
def test_trans_rejects_anything_else(AB, flag):
    with pytest.raises(TypeError, match="trans_a must be a bool or one of 'N', 'T', 'C'"):
        ozaki.gemm(*AB, trans_a=flag)


@pytest.mark.parametrize("name", ["alpha", "beta"])
@pytest.mark.parametrize("value", ["2", True, None, [2.0]])
def test_scalars_must_be_numbers(AB, name, value):
    A, B = AB
    with pytest.raises(TypeError, match=f"{name} must be a number"):
        ozaki.gemm(A, B, np.zeros((4, 3)), **{name: value})


def test_complex_scalars_give_complex_results(AB):
    A, B = AB
    C0 = np.ones((4, 3))
    X = ozaki.dgemm(A, B)
    C = ozaki.gemm(A, B, C0, alpha=1 + 2j, beta=-1j)
    assert C.dtype == np.complex128
    assert np.array_equal(C, X * (1 + 2j) + (-1j) * C0)


def test_numpy_scalars_are_accepted(AB):
    A, B = AB
    C0 = np.ones((4, 3))
    C = ozaki.gemm(A, B, C0, alpha=np.float32(2.0), beta=np.int64(1))
    assert np.array_equal(C, ozaki.gemm(A, B, C0, alpha=2.0, beta=1.0))


def test_masked_arrays_are_refused(AB):
    A, B = AB
    Am = np.ma.masked_array(A, mask=np.zeros_like(A, bool))
    with pytest.raises(TypeError, match="A is a masked array"):
        ozaki.dgemm(Am, B)


@pytest.mark.filterwarnings("ignore::PendingDeprecationWarning")
def test_subclasses_are_read_as_plain_arrays(AB):
    A, B = AB
    C = ozaki.dgemm(np.asmatrix(A), B)
    assert type(C) is np.ndarray and np.array_equal(C, ozaki.dgemm(A, B))


def test_int64_beyond_2_53_is_refused():
    A = np.array([[2 ** 53 + 1, 1]], dtype=np.int64)
    with pytest.raises(ValueError, match="A holds integers that float64 cannot represent"):
        ozaki.dgemm(A, np.ones((2, 1)))
    assert ozaki.dgemm(np.array([[2 ** 53, 2]]), np.ones((2, 1)))[0, 0] == 2.0 ** 53 + 2


# -- the process is left as it was ------------------------------------------

def _run(code, env_extra=None):
    import os
    import subprocess
    import sys
    env = dict(os.environ)
    env.update(env_extra or {})
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=env, check=True)


@pytest.mark.slow
def test_import_and_calls_leave_os_environ_alone():
    code = ("import os, numpy as np; before = dict(os.environ); import ozaki; "
            "a = dict(os.environ); ozaki.dgemm(np.ones((3, 3)), np.ones((3, 3))); "
            "print(a == before, dict(os.environ) == before)")
    assert _run(code).stdout.split() == ["True", "True"]


@pytest.mark.slow
def test_numba_threading_layer_is_left_to_the_user():
    # the passes run on ozaki's own threads: numba's layer (process-wide, and GNU
    # OpenMP's not fork-safe) is never launched, by the products nor the FFTs
    code = ("import numpy as np, ozaki, fft, numba.np.ufunc.parallel as par\n"
            "A = np.random.default_rng(0).standard_normal((300, 300))\n"
            "ozaki.dgemm(A, A, mode='accurate'); ozaki.dgemm(A, A, mode='fast')\n"
            "fft.fft(A); fft.rfftn(A.reshape(30, 10, 300))\n"
            "print(par._is_initialized)")
    assert _run(code).stdout.split() == ["False"]


@pytest.mark.slow
def test_malformed_workspace_limit_is_a_clear_error_at_use_not_at_import():
    code = ("import numpy as np, ozaki\n"
            "try:\n    ozaki.dgemm(np.ones((3, 3)), np.ones((3, 3)), num_moduli=6)\n"
            "except ValueError as exc:\n    print('error:', exc)\n")
    out = _run(code, {"OZAKI_WORKSPACE_LIMIT": "8GB"})
    assert "OZAKI_WORKSPACE_LIMIT must be a non-negative integer number of bytes" in out.stdout
    assert "'8GB'" in out.stdout
    out = _run("import numpy as np, ozaki; from ozaki.core.workspace import workspace_limit; "
               "print(workspace_limit())", {"OZAKI_WORKSPACE_LIMIT": "4096"})
    assert out.stdout.strip() == "4096"


def test_cached_tables_are_read_only():
    from ozaki.core.moduli import crt_plan
    from ozaki.backends.cpu.backend import pow2mod
    plan = crt_plan("int8", 16)
    for table in (plan.weights, plan.p_levels, pow2mod(251)):
        assert not table.flags.writeable
        with pytest.raises(ValueError, match="read-only"):
            table[0] = 1.0


# -- 1. the fast-mode certificate ------------------------------------------------

U = Fraction(1, 2 ** 53)


def _exact(A, B):
    A, B = np.asarray(A, float), np.asarray(B, float)
    return [[sum((Fraction(A[i, l]) * Fraction(B[l, j]) for l in range(A.shape[1])),
                 Fraction(0)) for j in range(B.shape[1])] for i in range(A.shape[0])]


def _fast_reproducer():
    rng = np.random.default_rng(17)
    M = rng.integers(2 ** 52, 2 ** 53, 2048, dtype=np.int64) | 2047
    a = np.r_[1.0, M * 2.0 ** -60]
    return a[None], a[:, None].copy()


def test_fast_mode_bound_covers_the_final_rounding():
    A, B = _fast_reproducer()
    C, info = ozaki.dgemm(A, B, scheme="int8", mode="fast", bounds=True)
    exact = _exact(A, B)[0][0]
    err = abs(Fraction(C[0, 0]) - exact)
    norm2 = sum(Fraction(x) ** 2 for x in A[0])  # ||a||_2 ||b||_2, exactly squared
    assert info.certified and info.bound_kind == "normwise"
    assert err <= Fraction(info.error_bound[0, 0])  # the bound holds ...
    assert err > U * norm2  # ... where the old claim error <= u ||a|| ||b|| did not
    assert err <= U * abs(exact) + U * norm2  # the target as now stated


@pytest.mark.parametrize("phi", [0.5, 2.0, 4.0])
@pytest.mark.parametrize("count", [4, 9, None])
def test_fast_mode_bounds_hold_per_entry(phi, count, rng):
    from validation.reference import test_matrix
    A, B = test_matrix(5, 64, phi, rng), test_matrix(64, 4, phi, rng)
    kw = {} if count is None else dict(num_moduli=count)
    C, info = ozaki.dgemm(A, B, scheme="int8", mode="fast", bounds=True, **kw)
    exact = _exact(A, B)
    for i in range(5):
        for j in range(4):
            assert abs(Fraction(C[i, j]) - exact[i][j]) <= Fraction(info.error_bound[i, j])


def test_fast_mode_overflow_is_not_certified_zero():
    C, info = ozaki.dgemm([[1.0, 1e308]], [[1e308], [1.0]], mode="fast", return_info=True)
    assert C[0, 0] == np.inf and info.exact_entries == 1
    C = ozaki.dgemm([[-1.0, 1e308]], [[1e308], [-1.0]], mode="fast")
    assert C[0, 0] == -np.inf


# -- 2. bounds are never below the true error -----------------------------------

@pytest.mark.parametrize("b", [0.3, 0.7, 0.5, 1.5])
@pytest.mark.parametrize("mode", ["accurate", "fast"])
def test_subnormal_results_have_honest_bounds(b, mode):
    A, B = np.array([[5e-324]]), np.array([[b]])
    C, info = ozaki.dgemm(A, B, mode=mode, bounds=True)
    err = abs(Fraction(C[0, 0]) - Fraction(5e-324) * Fraction(b))
    assert err <= Fraction(info.error_bound[0, 0])
    # correctly rounded: 0.3 * 2**-1074 -> 0, 0.7 -> 2**-1074, 0.5 -> 0 (tie to even)
    assert C[0, 0] == float(Fraction(5e-324) * Fraction(b))


# -- 3. special values of finite inputs follow exact arithmetic ----------------

@pytest.mark.parametrize("A,B,expected", [
    ([[1.0, -2.0, 1e308]], [[0.0], [1e308], [3.5]], 1.5e308),
    ([[2.0 ** 1000, 2.0 ** 600, -2.0 ** 600]], [[2.0 ** -1000], [2.0 ** 600], [2.0 ** 600]], 1.0),
    ([[1e308, 1e308, -1e308]], [[1.0], [1.0], [1.0]], 1e308),
    ([[1e308, -1e308, 1e308, 1e308]], [[1.0], [1.0], [1.0], [1.0]], np.inf),
    ([[-1e308, 1e308, -1e308, -1e308]], [[1.0], [1.0], [1.0], [1.0]], -np.inf),
    ([[1e308, 1e308]], [[1.0], [-1.0]], 0.0),
])
@pytest.mark.parametrize("mode", ["accurate", "fast"])
@pytest.mark.parametrize("count", ["auto", 8])
def test_finite_inputs_give_the_exactly_rounded_special_values(A, B, expected, mode, count):
    C = ozaki.dgemm(A, B, mode=mode, num_moduli=count)
    assert C[0, 0] == expected and not np.isnan(C[0, 0])


def test_sign_patterns_near_overflow_never_give_nan(rng):
    for _ in range(20):
        A = rng.choice([-1.0, 1.0], (3, 6)) * 1.5e308
        B = rng.choice([-1.0, 1.0], (6, 3))
        C = ozaki.dgemm(A, B)
        exact = _exact(A, B)
        for i in range(3):
            for j in range(3):
                x = exact[i][j]
                want = float(x) if abs(x) < 2 ** 1024 - 2 ** 970 else (np.inf if x > 0 else -np.inf)
                assert C[i, j] == want


def test_fallback_entries_are_exactly_rounded(rng):
    # (AB)_00 = 1 comes from 1e-300 * 1e300, invisible next to the 1e300 in row 0
    A = np.array([[1e300, 1e-300, 1.0], [2.0, 3.0, -1.0], [0.5, 1e-300, 4.0]])
    B = np.array([[0.0, 1.0], [1e300, 1.0], [0.0, 2.0]])
    C, info = ozaki.dgemm(A, B, scheme="int8", bounds=True)
    assert info.fallback == "exact" and info.fallback_entries == info.uncertified > 0
    exact = _exact(A, B)
    for i in range(3):
        for j in range(2):
            err = abs(Fraction(C[i, j]) - exact[i][j])
            assert err <= Fraction(info.error_bound[i, j])
    with pytest.raises(ValueError, match="fallback must be one of 'exact', 'raise', 'none'"):
        ozaki.dgemm(A, B, scheme="int8", fallback="native")  # the former name is gone


# -- 5. bitwise identity whatever path an entry takes -----------------------------

def test_fallback_results_do_not_depend_on_thread_counts(rng):
    from threadpoolctl import threadpool_limits

    from ozaki.backends.cpu import parallel
    from validation.reference import test_matrix
    A, B = test_matrix(40, 300, 4.0, rng), test_matrix(300, 30, 4.0, rng)
    A[3, :5] = [1e308, -1e308, 1e308, 7.0, 1e-300]  # overflow guard and fallback
    B[:5, 2] = [1.0, 1.0, 1.0, 1e300, 1e300]
    ref = info_ref = None
    for threads in (1, 2, 3):
        with parallel.limit(threads), threadpool_limits(threads):
            for engine in ("cpu-blas", "cpu-int8"):
                C, info = ozaki.dgemm(A, B, scheme="int8", engine=engine, return_info=True)
                if ref is None:
                    ref, info_ref = C, info
                    assert info.fallback_entries > 0 and info.exact_entries > 0
                assert np.array_equal(bits(C), bits(ref)), (threads, engine)
                assert info.fallback_entries == info_ref.fallback_entries


def test_fast_mode_bound_is_never_nan_at_one_crt_level():
    # one CRT level (gamma2 = 0) with ||a|| ||b|| beyond the overflow threshold
    A = np.array([[1e300, 1e-300, 1.0]])
    B = np.array([[0.0], [1e300], [0.0]])
    C, info = ozaki.dgemm(A, B, scheme="int8", mode="fast", num_moduli=4, bounds=True)
    bound = info.error_bound[0, 0]
    assert not np.isnan(bound)  # inf is an honest bound here: the norms overflow
    assert bound == np.inf or abs(Fraction(C[0, 0]) - 1) <= Fraction(bound)
