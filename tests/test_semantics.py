"""User-facing semantics: numpy's result types, refused dtypes and what the errors say.

1. ``matmul`` of two 1-D arrays returns a numpy scalar, as ``np.matmul`` does;
2. long double (arrays and ``alpha``/``beta``) is refused, never silently rounded;
3. ``zgemm`` takes a real prepared operand, with the bits of the unprepared call;
4. a 1-D operand of the BLAS forms points to ``ozaki.matmul``;
5. object arrays (pandas nullable columns) say what they hold and how to convert;
6. the dtype rules of the products beside those of ``fft`` (docs/contract.rst).
"""

import re
import subprocess
import sys
import types

import numpy as np
import pytest

import ozaki
from validation.reference import test_matrix


def bits(C):
    return np.ascontiguousarray(np.atleast_1d(C)).view(np.int64)


def same_bits(X, Y):
    X, Y = np.asarray(X), np.asarray(Y)
    return X.shape == Y.shape and X.dtype == Y.dtype and np.array_equal(bits(X), bits(Y))


@pytest.fixture
def AB(rng):
    return test_matrix(5, 9, 1.0, rng), test_matrix(9, 4, 1.0, rng)


# -- 1. matmul's result types are numpy's ----------------------------------------------

@pytest.mark.parametrize("complex_", [False, True])
def test_matmul_of_two_vectors_is_a_numpy_scalar(complex_, rng):
    a, b = rng.standard_normal(7), rng.standard_normal(7)
    if complex_:
        a = a + 1j * rng.standard_normal(7)
    want = np.matmul(a, b)
    got = ozaki.matmul(a, b)
    assert type(got) is type(want) is (np.complex128 if complex_ else np.float64)
    assert not isinstance(got, np.ndarray) and np.shape(got) == ()
    assert abs(got - want) <= 4 * 2.0 ** -53 * float(np.abs(a) @ np.abs(b))
    # the same value as the 2-D product it stands for, bit for bit
    two_d = (ozaki.zgemm if complex_ else ozaki.dgemm)(a[None, :], b[:, None])
    assert same_bits(np.asarray(got), two_d[0, 0])
    got_i, info = ozaki.matmul(a, b, return_info=True)
    assert type(got_i) is type(want) and same_bits(np.asarray(got_i), np.asarray(got))
    assert info.num_moduli >= 2
    # with out, the 0-d out is returned, as np.matmul(a, b, out=out) does
    out, np_out = (np.empty((), np.complex128 if complex_ else np.float64) for _ in "12")
    assert np.matmul(a, b, out=np_out) is np_out
    assert ozaki.matmul(a, b, out=out) is out and same_bits(out, np.asarray(got))


def test_matmul_of_integer_vectors_is_exact():
    a, b = np.arange(1, 6), np.arange(5, 0, -1)
    got = ozaki.matmul(a, b)
    assert type(got) is np.float64 and got == 35.0


@pytest.mark.parametrize("sa,sb", [((5,), (5, 3)), ((4, 5), (5,)), ((5,), (2, 5, 3)),
                                   ((2, 4, 5), (5,)), ((0,), (0, 3)), ((5,), (5,))])
def test_matmul_shapes_and_types_match_numpy(sa, sb, rng):
    A = rng.integers(-9, 10, sa).astype(np.float64)
    B = rng.integers(-9, 10, sb).astype(np.float64)
    want = np.matmul(A, B)
    got = ozaki.matmul(A, B)
    assert type(got) is type(want) and np.shape(got) == np.shape(want)
    assert np.asarray(got).dtype == np.asarray(want).dtype
    assert np.array_equal(got, want)  # small integers: exact


# -- 2. long double is refused -----------------------------------------------------------

WIDE = np.dtype(np.longdouble).itemsize > 8 and np.finfo(np.longdouble).nmant > 52
needs_wide = pytest.mark.skipif(not WIDE, reason="long double is float64 on this platform")


def _calls(A, B, ld):
    """Each entry point with long double (``ld``) in one place, and the name it has."""
    C = np.ones((A.shape[0], B.shape[1]))
    return [
        ("A", lambda: ozaki.dgemm(A.astype(ld), B)),
        ("B", lambda: ozaki.dgemm(A, B.astype(ld))),
        ("A", lambda: ozaki.zgemm(A.astype(ld), B)),
        ("B", lambda: ozaki.zgemm(A, B.astype(ld))),
        ("A", lambda: ozaki.gemm(A.astype(ld), B)),
        ("B", lambda: ozaki.gemm(A, B.T.astype(ld), trans_b="T")),
        ("C", lambda: ozaki.gemm(A, B, C.astype(ld), beta=1.0)),
        ("C", lambda: ozaki.zgemm(A, B, C.astype(ld), beta=1.0)),
        ("A", lambda: ozaki.matmul(A.astype(ld), B)),
        ("B", lambda: ozaki.matmul(A, B[:, 0].astype(ld))),
        ("A", lambda: ozaki.prepare(A.astype(ld))),
        ("A", lambda: ozaki.prepare(B.astype(ld), side="right")),
    ]


@needs_wide
def test_long_double_arrays_are_refused(AB):
    A, B = AB
    for name, call in _calls(A, B, np.longdouble):
        with pytest.raises(TypeError) as err:
            call()
        msg = str(err.value)
        assert msg.startswith(f"{name} has dtype {np.dtype(np.longdouble)} (long double)")
        assert "float64 cannot hold exactly" in msg
        assert f"{name}.astype(np.float64) if rounding is intended" in msg


@needs_wide
def test_long_double_complex_arrays_are_refused(AB):
    A, B = AB
    for name, call in _calls(A, B, np.clongdouble):
        if "dgemm" in call.__code__.co_names:
            with pytest.raises(TypeError, match=f"{name} is complex: use ozaki.zgemm"):
                call()
            continue
        with pytest.raises(TypeError) as err:
            call()
        msg = str(err.value)
        assert msg.startswith(f"{name} has dtype {np.dtype(np.clongdouble)} "
                              "(long double complex)")
        assert "complex128 cannot hold exactly" in msg
        assert f"{name}.astype(np.complex128) if rounding is intended" in msg


@needs_wide
@pytest.mark.parametrize("func", [ozaki.gemm, ozaki.zgemm])
@pytest.mark.parametrize("which", ["alpha", "beta"])
def test_long_double_scalars_are_refused(func, which, AB):
    A, B = AB
    C = np.ones((5, 4))
    # even a value that float64 holds exactly: the dtype decides, as for arrays
    for value, kind in ((np.longdouble(2), "float"), (np.clongdouble(2 + 1j), "complex")):
        with pytest.raises(TypeError) as err:
            func(A, B, C, **{which: value})
        msg = str(err.value)
        assert msg.startswith(f"{which} has dtype {value.dtype} (long double")
        assert f"{kind}({which}) if rounding is intended" in msg


@needs_wide
def test_long_double_refusal_follows_fft():
    fft = pytest.importorskip("fft")
    with pytest.raises(TypeError, match="long double"):
        fft.fft(np.ones(4, np.longdouble))
    with pytest.raises(TypeError, match="long double"):
        ozaki.matmul(np.ones(4, np.longdouble), np.ones(4))


def test_narrow_floats_are_widened_exactly(AB, rng):
    A, B = AB
    A32, B16 = A.astype(np.float32), B.astype(np.float16)
    got = ozaki.dgemm(A32, B16)
    assert got.dtype == np.float64
    assert same_bits(got, ozaki.dgemm(A32.astype(np.float64), B16.astype(np.float64)))
    Z = (A + 1j * A[::-1]).astype(np.complex64)
    gz = ozaki.zgemm(Z, B16)
    assert gz.dtype == np.complex128
    assert same_bits(gz, ozaki.zgemm(Z.astype(np.complex128), B16.astype(np.float64)))
    gm = ozaki.matmul(A32, B16)
    assert gm.dtype == np.float64 and same_bits(gm, got)
    P = ozaki.prepare(A32)
    assert P.array.dtype == np.float64 and same_bits(ozaki.dgemm(P, B16), got)
    # numpy scalars of the narrow and native widths are taken as they are
    C = rng.standard_normal((5, 4))
    want = ozaki.gemm(A, B, C, alpha=0.5, beta=2.0)
    assert same_bits(ozaki.gemm(A, B, C, alpha=np.float32(0.5), beta=np.float16(2)), want)
    assert same_bits(ozaki.gemm(A, B, C, alpha=np.float64(0.5), beta=np.int64(2)), want)


# -- 3. zgemm takes a real prepared operand ----------------------------------------------

@pytest.mark.parametrize("mode", ["accurate", "fast"])
@pytest.mark.parametrize("scheme", ["fp64", "int8"])
def test_zgemm_takes_real_prepared_operands(scheme, mode, rng):
    A, B = test_matrix(6, 11, 2.0, rng), test_matrix(11, 5, 2.0, rng)
    Bz = B + 1j * test_matrix(11, 5, 2.0, rng)
    kw = dict(scheme=scheme, mode=mode, bounds=True)
    PA, PB = ozaki.prepare(A), ozaki.prepare(B, side="right")
    for left, right, a, b in ((PA, Bz, A, Bz), (PA, B, A, B), (A, PB, A, B),
                              (Bz.T.copy(), PB, Bz.T.copy(), B), (PA, PB, A, B)):
        want, wi = ozaki.zgemm(a, b, **kw)
        got, gi = ozaki.zgemm(left, right, **kw)
        assert got.dtype == np.complex128 and same_bits(got, want)
        assert same_bits(gi.error_bound, wi.error_bound)
        # the complex product even when both operands are real: 3 products per modulus
        assert (gi.num_moduli, gi.gemms) == (wi.num_moduli, wi.gemms)
    # and the prepared real operand still serves real products, with their bits
    assert same_bits(ozaki.dgemm(PA, B, scheme=scheme, mode=mode),
                     ozaki.dgemm(A, B, scheme=scheme, mode=mode))
    # gemm and matmul with a complex other operand: the bits of zgemm
    want = ozaki.zgemm(A, Bz, scheme=scheme, mode=mode)
    assert same_bits(ozaki.gemm(PA, Bz, scheme=scheme, mode=mode), want)
    assert same_bits(ozaki.matmul(PA, Bz, scheme=scheme, mode=mode), want)


def test_zgemm_real_prepared_blas_form(rng):
    A, B = test_matrix(4, 7, 1.0, rng), test_matrix(7, 3, 1.0, rng)
    C = rng.standard_normal((4, 3)) + 1j * rng.standard_normal((4, 3))
    PA, PB = ozaki.prepare(A), ozaki.prepare(B, side="right")
    kw = dict(alpha=0.5 - 2j, beta=1.5j)
    want = ozaki.zgemm(A, B, C, **kw)
    assert same_bits(ozaki.zgemm(PA, PB, C, **kw), want)
    assert same_bits(ozaki.zgemm(PA, B, C, **kw), want)
    out = np.empty((4, 3), np.complex128)
    assert ozaki.zgemm(PA, PB, C, out=out, **kw) is out and same_bits(out, want)
    # both prepared real, no complex scalar: still complex128, as for real arrays
    both = ozaki.zgemm(PA, PB)
    assert both.dtype == np.complex128 and same_bits(both, ozaki.zgemm(A, B))
    assert np.all(both.imag == 0) and np.array_equal(both.real, ozaki.dgemm(A, B))
    # what zgemm still refuses of a prepared operand
    with pytest.raises(ValueError, match="used as it is"):
        ozaki.zgemm(PA, B, trans_a="C")
    with pytest.raises(ValueError, match="prepared as the left operand"):
        ozaki.zgemm(B.T, PA)


def test_zgemm_real_prepared_keeps_the_unprepared_result_bits(rng):
    """The paths that were valid before keep their bits (a regression guard)."""
    A, B = test_matrix(5, 8, 3.0, rng), test_matrix(8, 4, 3.0, rng)
    Az = A + 1j * test_matrix(5, 8, 3.0, rng)
    PAz = ozaki.prepare(Az)
    assert same_bits(ozaki.zgemm(PAz, B), ozaki.zgemm(Az, B))
    assert same_bits(ozaki.gemm(ozaki.prepare(A), B), ozaki.dgemm(A, B))
    assert ozaki.gemm(ozaki.prepare(A), B).dtype == np.float64


# -- 4. 1-D operands of the BLAS forms point to matmul ------------------------------------

@pytest.mark.parametrize("func", [ozaki.dgemm, ozaki.zgemm, ozaki.gemm])
def test_one_d_operands_suggest_matmul(func, AB):
    A, B = AB
    for args, name in (((A, B[:, 0]), "B"), ((A[0], B), "A")):
        with pytest.raises(ValueError) as err:
            func(*args)
        msg = str(err.value)
        assert msg.startswith(f"{name} must be 2-D, got 1-D with shape")
        assert "ozaki.matmul takes 1-D operands" in msg and "np.matmul semantics" in msg
    with pytest.raises(ValueError, match=r"B must be 2-D, got 3-D.*ozaki\.matmul"):
        func(A, B[None])
    # and matmul does take them
    assert np.array_equal(ozaki.matmul(A, B[:, 0]), ozaki.dgemm(A, B[:, :1])[:, 0])


def test_c_of_the_wrong_dimension_does_not_suggest_matmul(AB):
    A, B = AB
    with pytest.raises(ValueError) as err:
        ozaki.gemm(A, B, np.ones(4), beta=1.0)
    assert str(err.value).startswith("C must be 2-D") and "matmul" not in str(err.value)


# -- 5. object arrays and pandas -----------------------------------------------------------

def test_object_arrays_name_the_cause_and_the_conversion(AB):
    A, B = AB
    Bo = B.astype(object)
    Bo[2, 1] = None
    for call in (lambda: ozaki.dgemm(A, Bo), lambda: ozaki.zgemm(A, Bo),
                 lambda: ozaki.matmul(A, Bo), lambda: ozaki.prepare(Bo, side="right")):
        with pytest.raises(TypeError) as err:
            call()
        msg = str(err.value)
        name = "A" if "prepare" in call.__code__.co_names else "B"
        assert msg.startswith(f"{name} must be a real or complex numeric array, "
                              "got dtype object")
        assert "holds Python objects, e.g. pandas nullable values (pd.NA)" in msg
        assert "first non-number: NoneType None at (2, 1)" in msg
        assert "df.to_numpy(dtype=float, na_value=np.nan)" in msg
        assert f"np.asarray({name}, dtype=np.float64)" in msg
    # an object array of numbers only: refused too (no silent conversion), no culprit named
    with pytest.raises(TypeError, match="got dtype object") as err:
        ozaki.dgemm(A.astype(object), B)
    assert "first non-number" not in str(err.value)
    # other non-numeric dtypes keep their message
    with pytest.raises(TypeError, match=r"must be a real or complex numeric array, got dtype "
                                        r"<U"):
        ozaki.dgemm(A.astype(str), B)


def _fake_pandas():
    """A stand-in ``pandas`` module: its classes are what ozaki looks for."""
    pd = types.ModuleType("pandas")

    class DataFrame:
        def __init__(self, values, broken=False):
            self.values, self.broken = values, broken

        def __array__(self, dtype=None, copy=None):
            if self.broken:
                raise ValueError("cannot convert to 'float64'-dtype NumPy array with NA")
            return np.asarray(self.values, dtype=dtype)

    class Series(DataFrame):
        pass

    class Index:
        pass

    class ExtensionArray(DataFrame):
        pass

    pd.DataFrame, pd.Series, pd.Index = DataFrame, Series, Index
    pd.api = types.SimpleNamespace(extensions=types.SimpleNamespace(
        ExtensionArray=ExtensionArray))
    return pd


def test_pandas_objects_get_their_own_conversion(AB, monkeypatch):
    A, B = AB
    pd = _fake_pandas()
    monkeypatch.setitem(sys.modules, "pandas", pd)
    values = A.astype(object)
    values[0, 3] = "NA"
    with pytest.raises(TypeError) as err:
        ozaki.dgemm(pd.DataFrame(values), B)
    msg = str(err.value)
    assert "a pandas DataFrame that holds Python objects" in msg
    assert "A.to_numpy(dtype=float, na_value=np.nan)" in msg and "np.asarray" not in msg
    assert "first non-number: str 'NA' at (0, 3)" in msg
    with pytest.raises(TypeError, match=r"a pandas ExtensionArray that holds"):
        ozaki.matmul(pd.api.extensions.ExtensionArray(values[0]), B)
    # a pandas object whose conversion itself fails: the same advice
    with pytest.raises(TypeError) as err:
        ozaki.dgemm(A, pd.DataFrame(B, broken=True))
    msg = str(err.value)
    assert msg.startswith("B must be an array convertible to float64 or complex128 "
                          "(got DataFrame: cannot convert")
    assert "B.to_numpy(dtype=float, na_value=np.nan)" in msg
    # numeric pandas data is taken as its numpy array, bits unchanged
    assert same_bits(ozaki.dgemm(pd.DataFrame(A), pd.Series(B)), ozaki.dgemm(A, B))


def test_a_broken_stand_in_pandas_is_ignored(AB, monkeypatch):
    A, B = AB
    monkeypatch.setitem(sys.modules, "pandas", types.ModuleType("pandas"))
    with pytest.raises(TypeError, match="got dtype object: it holds Python objects"):
        ozaki.dgemm(A.astype(object), B)


@pytest.mark.slow
def test_object_refusal_never_imports_pandas():
    code = ("import sys, numpy as np, ozaki\n"
            "try:\n"
            "    ozaki.dgemm(np.array([[1.0, None]], dtype=object), np.ones((2, 1)))\n"
            "except TypeError as exc:\n"
            "    assert 'pd.NA' in str(exc)\n"
            "print('pandas' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "False"


def test_real_pandas_nullable_frame(AB):
    pd = pytest.importorskip("pandas")
    A, B = AB
    col = pd.array([1.5, None, 2.0, -1.0, 0.25], dtype="Float64")
    df = pd.DataFrame({"a": col, "b": pd.array([1, 2, None, 4, 5], dtype="Int64")})
    ones = np.ones((5, 2))
    converted = df.to_numpy(dtype=float, na_value=np.nan)
    want = ozaki.dgemm(converted.T, ones)
    assert want.dtype == np.float64 and np.isnan(want).all()
    if np.asarray(df).dtype == object:  # pandas versions that hand out pd.NA
        with pytest.raises(TypeError) as err:
            ozaki.dgemm(df.T, ones)
        msg = str(err.value)
        assert "a pandas DataFrame that holds Python objects" in msg and "pd.NA" in msg
        assert "A.to_numpy(dtype=float, na_value=np.nan)" in msg
        with pytest.raises(TypeError, match="pandas"):
            ozaki.matmul(col, ones)
    else:  # pandas versions that hand out NaN: the same bits as the explicit conversion
        assert same_bits(ozaki.dgemm(df.T, ones), want)


# -- 6. the dtype rules, products beside fft (docs/contract.rst) ---------------------------

def test_result_dtypes_products_and_fft(AB):
    A, B = AB
    A32 = A.astype(np.float32)
    assert ozaki.dgemm(A32, B.astype(np.float32)).dtype == np.float64
    assert ozaki.zgemm(A32, B.astype(np.float32)).dtype == np.complex128
    assert ozaki.matmul(A32, B.astype(np.float16)).dtype == np.float64
    assert ozaki.matmul(A32.astype(np.complex64), B).dtype == np.complex128
    assert ozaki.dgemm(A.astype(np.int32), B).dtype == np.float64
    fft = pytest.importorskip("fft")
    assert fft.fft(A32[0]).dtype == np.complex64
    assert fft.fft(A[0]).dtype == np.complex128
    assert fft.fft(A.astype(np.int32)[0]).dtype == np.complex128


def test_contract_documents_the_dtype_rules():
    import os
    path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                        "docs", "contract.rst")
    with open(path) as f:
        text = f.read()
    section = text[text.index("Input and result dtypes"):]
    for needle in ("float32", "complex64", "scipy.fft", "long double",
                   "A.astype(np.float64)", "df.to_numpy(dtype=float, na_value=np.nan)"):
        assert needle in section, needle
    assert re.search(r"numpy scalar", section)
