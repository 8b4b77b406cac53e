"""Argument checking for the public functions: clear errors, nothing silently converted."""

from __future__ import annotations

import itertools
import sys
from typing import Any

import numpy as np

from ..backends.engines import Engine, get_engine, machine_scheme
from ..core.moduli import MIN_MODULI, SCHEMES, max_moduli

__all__ = ["MODES", "FALLBACKS", "operand", "transpose_flag", "scalar", "check_choice",
           "resolve", "policy_for"]

MODES = ("accurate", "fast")
FALLBACKS = ("exact", "raise", "none")


def operand(X: Any, name: str, *, ndim: int | None = 2, complex_ok: bool = True,
            matmul_hint: bool = False) -> np.ndarray:
    """``X`` as a float64 or complex128 ndarray (a view when it already is one).

    ``ndim=None`` accepts any dimension >= 1 (``matmul``). Masked arrays are
    refused (their masks would be ignored), as are long double (float64 and
    complex128 cannot hold it), 64-bit integers that float64 cannot hold
    exactly, and non-numeric dtypes (object arrays, such as pandas nullable
    columns, included). Narrower floats (float16, float32, complex64) and
    smaller integers widen exactly. ``matmul_hint`` adds to a wrong-dimension
    error that :func:`ozaki.matmul` takes 1-D operands and stacks.
    """
    if type(X) is np.ndarray and (X.dtype == np.float64 or (
            complex_ok and X.dtype == np.complex128)) and (
            X.ndim == ndim if ndim is not None else X.ndim >= 1):
        return X  # already what the checks below would give (a small product's fast path)
    if isinstance(X, np.ma.MaskedArray):
        raise TypeError(f"{name} is a masked array: masks are not supported (the product "
                        "would silently use the masked values); pass np.ma.filled(X, 0) "
                        "or the compressed data")
    pandas = _pandas_type(X)
    try:
        arr = np.asarray(X)  # a plain ndarray: subclasses (np.matrix) are viewed as such
    except Exception as exc:  # e.g. a GPU array that refuses implicit copies
        hint = (f"; convert it explicitly, e.g. {name}.to_numpy(dtype=float, "
                "na_value=np.nan)" if pandas else "")
        raise TypeError(f"{name} must be an array convertible to float64 or complex128 "
                        f"(got {type(X).__name__}: {exc}){hint}") from None
    if arr.dtype.kind == "c":
        if not complex_ok:
            raise TypeError(f"{name} is complex: use ozaki.zgemm, ozaki.gemm or ozaki.matmul "
                            "for complex products")
        _refuse_long_double(arr.dtype, name)
        out = arr.astype(np.complex128, copy=False)
    elif arr.dtype.kind in "biuf":
        _refuse_long_double(arr.dtype, name)
        out = arr.astype(np.float64, copy=False)
        if arr.dtype.kind in "iu" and arr.dtype.itemsize > 4 and arr.size:
            # 64-bit integers beyond 2**53 do not convert exactly: refuse to round them
            with np.errstate(invalid="ignore"):  # 2**63 and 2**64 wrap: caught below
                back = out.astype(arr.dtype)
            if not np.array_equal(back, arr):
                raise ValueError(f"{name} holds integers that float64 cannot represent "
                                 "exactly (|x| > 2**53); convert them explicitly if rounding "
                                 "is intended")
    elif arr.dtype.kind == "O":
        how = (f"{name}.to_numpy(dtype=float, na_value=np.nan)" if pandas else
               "df.to_numpy(dtype=float, na_value=np.nan) for a pandas DataFrame or "
               f"Series, np.asarray({name}, dtype=np.float64) otherwise")
        what = f"a pandas {pandas} that" if pandas else "it"
        raise TypeError(f"{name} must be a real or complex numeric array, got dtype object: "
                        f"{what} holds Python objects, e.g. pandas nullable values (pd.NA) "
                        f"or integers beyond int64{_first_non_number(arr)}; convert it "
                        f"explicitly, e.g. {how}")
    else:
        raise TypeError(f"{name} must be a real or complex numeric array, got dtype {arr.dtype}")
    if ndim is None:
        if arr.ndim == 0:
            raise ValueError(f"{name} must be at least 1-D (matmul does not take scalars)")
    elif arr.ndim != ndim:
        hint = ("; ozaki.matmul takes 1-D operands and stacks (np.matmul semantics)"
                if matmul_hint and arr.ndim >= 1 else "")
        raise ValueError(f"{name} must be {ndim}-D, got {arr.ndim}-D with shape "
                         f"{arr.shape}{hint}")
    return out


def _refuse_long_double(dtype: np.dtype, name: str, *, scalar: bool = False) -> None:
    """Refuse long double (wider than float64 / complex128): it would be rounded."""
    complex_ = dtype.kind == "c"
    if dtype.kind not in "fc" or dtype.itemsize <= (16 if complex_ else 8):
        return
    target = "complex128" if complex_ else "float64"
    how = (f"{'complex' if complex_ else 'float'}({name})" if scalar
           else f"{name}.astype(np.{target})")
    raise TypeError(f"{name} has dtype {dtype} (long double{' complex' if complex_ else ''}), "
                    f"which {target} cannot hold exactly; convert it explicitly with {how} "
                    "if rounding is intended")


def _pandas_type(X: Any) -> str | None:
    """The class name of a pandas object (DataFrame, Series, extension array), else None.

    Never imports pandas: its objects are recognised only when it is already loaded.
    """
    pd = sys.modules.get("pandas")
    if pd is None:
        return None
    try:
        kinds = (pd.DataFrame, pd.Series, pd.Index, pd.api.extensions.ExtensionArray)
        return type(X).__name__ if isinstance(X, kinds) else None
    except (AttributeError, TypeError):  # a partly imported or stand-in module
        return None


def _first_non_number(arr: np.ndarray) -> str:
    """`` (first non-number: ...)`` for an object array, or ``""`` when all are numbers."""
    numbers = (bool, int, float, complex, np.number, np.bool_)
    for index, value in itertools.islice(np.ndenumerate(arr), 1 << 20):  # an error path
        if not isinstance(value, numbers):
            where = f" at {index}" if arr.ndim else ""
            text = repr(value)
            text = text if len(text) <= 40 else text[:37] + "..."
            return f" (first non-number: {type(value).__name__} {text}{where})"
    return ""


def transpose_flag(value, name: str) -> str:
    """``trans_a``/``trans_b`` as a BLAS letter: a bool, or 'N' / 'T' / 'C' (any case)."""
    if isinstance(value, (bool, np.bool_)):
        return "T" if value else "N"
    if isinstance(value, str) and value.upper() in ("N", "T", "C"):
        return value.upper()
    raise TypeError(f"{name} must be a bool or one of 'N', 'T', 'C'; got {value!r}")


def apply_transpose(X: np.ndarray, letter: str) -> np.ndarray:
    """``op(X)``: ``X``, ``X.T``, or ``X.conj().T`` ('C' is 'T' for real ``X``)."""
    if letter == "N":
        return X
    if letter == "C" and np.iscomplexobj(X):
        return X.conj().T
    return X.T


def scalar(value, name: str, *, complex_ok: bool = True) -> float | complex:
    """``alpha``/``beta``: a real (or complex) number, Python or numpy; not bool, not str.

    Long double scalars are refused (``TypeError``) like long double arrays: they
    would be rounded.
    """
    if isinstance(value, (np.floating, np.complexfloating)):
        _refuse_long_double(value.dtype, name, scalar=True)
    if isinstance(value, (complex, np.complexfloating)):
        if not complex_ok:
            raise TypeError(f"{name} is complex: use ozaki.zgemm or ozaki.gemm")
        return complex(value)
    if isinstance(value, (bool, np.bool_)) or not isinstance(
            value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name} must be a number, got {type(value).__name__} {value!r}")
    return float(value)


def check_choice(value, name: str, choices) -> None:
    if not isinstance(value, str) or value not in choices:
        raise ValueError(f"{name} must be one of {', '.join(map(repr, choices))}; "
                         f"got {value!r}")


def resolve(scheme, num_moduli, mode, engine, backend=None) -> tuple[str, int | str, str, Engine]:
    """Check and resolve ``scheme``, ``num_moduli``, ``mode`` and ``engine`` (on ``backend``'s
    engines; ``None``: the host engines).

    ``scheme="auto"`` is the engine's :attr:`~ozaki.Engine.preferred_scheme`; with
    ``engine="auto"`` too, :func:`ozaki.set_scheme`'s, else the machine's fastest for
    the mode (:func:`ozaki.backends.engines.machine_scheme`), on every backend.
    """
    check_choice(scheme, "scheme", ("auto",) + SCHEMES)
    check_choice(mode, "mode", MODES)
    if scheme == "auto" and (engine is None or isinstance(engine, str) and engine == "auto"):
        scheme = machine_scheme(mode)  # the machine's (or set_scheme's): on every backend
    eng = get_engine(engine, scheme) if backend is None else backend.engine(engine, scheme)
    if scheme == "auto":
        scheme = eng.preferred_scheme
    top = max_moduli(scheme)
    if isinstance(num_moduli, str):
        if num_moduli != "auto":
            raise ValueError(f"num_moduli must be 'auto' or an int in "
                             f"[{MIN_MODULI}, {top}]; got {num_moduli!r}")
        return scheme, "auto", mode, eng
    if isinstance(num_moduli, (bool, np.bool_)) or not isinstance(num_moduli, (int, np.integer)):
        raise TypeError(f"num_moduli must be 'auto' or an int, got {type(num_moduli).__name__}")
    if not MIN_MODULI <= num_moduli <= top:
        raise ValueError(f"num_moduli for scheme {scheme!r} must be in "
                         f"[{MIN_MODULI}, {top}]; got {num_moduli}")
    return scheme, int(num_moduli), mode, eng


def policy_for(fallback, num_moduli) -> str:
    """The fallback policy: ``"exact"`` by default with ``"auto"``, else ``"none"``."""
    if fallback is None:
        return "exact" if num_moduli == "auto" else "none"
    check_choice(fallback, "fallback", FALLBACKS)
    return fallback
