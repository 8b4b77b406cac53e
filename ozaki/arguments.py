"""Argument checking for the public functions: clear errors, nothing silently converted."""

from __future__ import annotations

from typing import Any

import numpy as np

from .engines import Engine, get_engine
from .moduli import MIN_MODULI, SCHEMES, max_moduli

__all__ = ["MODES", "FALLBACKS", "operand", "transpose_flag", "scalar", "check_choice",
           "resolve", "policy_for"]

MODES = ("accurate", "fast")
FALLBACKS = ("exact", "raise", "none")


def operand(X: Any, name: str, *, ndim: int | None = 2, complex_ok: bool = True) -> np.ndarray:
    """``X`` as a float64 or complex128 ndarray (a view when it already is one).

    ``ndim=None`` accepts any dimension >= 1 (``matmul``). Masked arrays are
    refused (their masks would be ignored), as are 64-bit integers that float64
    cannot hold exactly and non-numeric dtypes.
    """
    if isinstance(X, np.ma.MaskedArray):
        raise TypeError(f"{name} is a masked array: masks are not supported (the product "
                        "would silently use the masked values); pass np.ma.filled(X, 0) "
                        "or the compressed data")
    try:
        arr = np.asarray(X)  # a plain ndarray: subclasses (np.matrix) are viewed as such
    except Exception as exc:  # e.g. a GPU array that refuses implicit copies
        raise TypeError(f"{name} must be an array convertible to float64 or complex128 "
                        f"(got {type(X).__name__}: {exc})") from None
    if arr.dtype.kind == "c":
        if not complex_ok:
            raise TypeError(f"{name} is complex: use ozaki.zgemm, ozaki.gemm or ozaki.matmul "
                            "for complex products")
        out = arr.astype(np.complex128, copy=False)
    elif arr.dtype.kind in "biuf":
        out = arr.astype(np.float64, copy=False)
        if arr.dtype.kind in "iu" and arr.dtype.itemsize > 4 and arr.size:
            # 64-bit integers beyond 2**53 do not convert exactly: refuse to round them
            with np.errstate(invalid="ignore"):  # 2**63 and 2**64 wrap: caught below
                back = out.astype(arr.dtype)
            if not np.array_equal(back, arr):
                raise ValueError(f"{name} holds integers that float64 cannot represent "
                                 "exactly (|x| > 2**53); convert them explicitly if rounding "
                                 "is intended")
    else:
        raise TypeError(f"{name} must be a real or complex numeric array, got dtype {arr.dtype}")
    if ndim is None:
        if arr.ndim == 0:
            raise ValueError(f"{name} must be at least 1-D (matmul does not take scalars)")
    elif arr.ndim != ndim:
        raise ValueError(f"{name} must be {ndim}-D, got {arr.ndim}-D with shape {arr.shape}")
    return out


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
    """``alpha``/``beta``: a real (or complex) number, Python or numpy; not bool, not str."""
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


def resolve(scheme, num_moduli, mode, engine) -> tuple[str, int | str, str, Engine]:
    """Check and resolve ``scheme``, ``num_moduli``, ``mode`` and ``engine``.

    ``scheme="auto"`` is the engine's :attr:`~ozaki.engines.Engine.preferred_scheme`.
    """
    check_choice(scheme, "scheme", ("auto",) + SCHEMES)
    check_choice(mode, "mode", MODES)
    eng = get_engine(engine, scheme)
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
    if isinstance(fallback, str) and fallback == "native":
        import warnings
        warnings.warn('fallback="native" is now "exact": fallback entries are computed by '
                      "the exactly rounded dot product, not by BLAS", FutureWarning,
                      stacklevel=4)
        return "exact"
    check_choice(fallback, "fallback", FALLBACKS)
    return fallback
