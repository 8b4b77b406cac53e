"""Adversarial reproducers: certificate holes, special values, determinism, arguments.

Each test here failed before the fixes it names (issue "Reliability: close the
certificate and special-value holes found by adversarial testing").
"""

from fractions import Fraction

import numpy as np
import pytest

import ozaki
from ozaki.engines import BlasEngine, FP8Engine, Int8Engine


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
@pytest.mark.parametrize("value,match", [("2", "must be a real number"),
                                         (True, "must be a real number"),
                                         (None, "must be a real number"),
                                         ([2.0], "must be a real number"),
                                         (1 + 2j, "complex")])
def test_scalars_must_be_real_numbers(AB, name, value, match):
    A, B = AB
    with pytest.raises(TypeError, match=f"{name} (must be|is complex)"):
        ozaki.gemm(A, B, np.zeros((4, 3)), **{name: value})


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
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    env.update(env_extra or {})
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=env, check=True)


def test_import_and_calls_leave_os_environ_alone():
    code = ("import os, numpy as np; before = dict(os.environ); import ozaki; "
            "a = dict(os.environ); ozaki.dgemm(np.ones((3, 3)), np.ones((3, 3))); "
            "print(a == before, dict(os.environ) == before)")
    assert _run(code).stdout.split() == ["True", "True"]


def test_wait_policy_reaches_the_openmp_runtime():
    code = ("import numba, numpy as np, ozaki; ozaki.dgemm(np.ones((3, 3)), np.ones((3, 3))); "
            "print(numba.threading_layer())")
    out = _run(code, {"OMP_DISPLAY_ENV": "TRUE"})
    if out.stdout.strip() != "omp":
        pytest.skip("numba runs another threading layer here")
    assert "OMP_WAIT_POLICY = 'PASSIVE'" in out.stderr
    out = _run(code, {"OMP_DISPLAY_ENV": "TRUE", "OMP_WAIT_POLICY": "ACTIVE"})
    assert "OMP_WAIT_POLICY = 'ACTIVE'" in out.stderr  # the process's own setting wins


def test_malformed_workspace_limit_is_a_clear_error_at_use_not_at_import():
    code = ("import numpy as np, ozaki\n"
            "try:\n    ozaki.dgemm(np.ones((3, 3)), np.ones((3, 3)))\n"
            "except ValueError as exc:\n    print('error:', exc)\n")
    out = _run(code, {"OZAKI_WORKSPACE_LIMIT": "8GB"})
    assert "OZAKI_WORKSPACE_LIMIT must be a non-negative integer number of bytes" in out.stdout
    assert "'8GB'" in out.stdout
    out = _run("import numpy as np, ozaki; from ozaki.workspace import workspace_limit; "
               "print(workspace_limit())", {"OZAKI_WORKSPACE_LIMIT": "4096"})
    assert out.stdout.strip() == "4096"


def test_cached_tables_are_read_only():
    from ozaki.moduli import crt_plan
    from ozaki.operands import pow2mod
    plan = crt_plan("int8", 16)
    for table in (plan.weights, plan.p_levels, pow2mod(251)):
        assert not table.flags.writeable
        with pytest.raises(ValueError, match="read-only"):
            table[0] = 1.0
