"""Unit roundoff of a product at a given count of moduli, the count for a unit roundoff,
and the check of a unit-roundoff argument.

:func:`~ozaki.linalg.solve_refined` factors at a reduced count of moduli chosen from the
unit roundoff ``u_f`` asked of the factorisation's products; these two functions convert
between the two. The auto count (:func:`ozaki.auto_num_moduli`) is FP64-grade, error
about ``u (|A||B|)_ij``; each modulus ``p`` fewer takes ``log2 p`` bits from ``log2 P``,
half from each operand, so the error grows by ``sqrt(p)`` (docs/accuracy.rst):
``u_N = u 2**((log2 P_auto - log2 P_N) / 2)``, an upper estimate (the tests measure it;
docs/linalg.rst, "Mixed-precision refinement", tabulates the counts).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..api.facts import moduli as scheme_moduli
from ..core.moduli import auto_num_moduli

__all__ = ["U", "precision_of_moduli", "moduli_for_precision", "unit_roundoff"]

#: FP64's unit roundoff.
U = 2.0 ** -53


def precision_of_moduli(scheme: str, num_moduli: int, k: int) -> float:
    """Unit roundoff ``u_N`` of a product at ``num_moduli`` moduli (an upper estimate).

    ``u 2**((log2 P_auto - log2 P_N) / 2)``: ``P_auto`` the product of the auto
    count's moduli at inner dimension ``k`` (FP64-grade), ``P_N`` of the first
    ``num_moduli``; ``u`` from the auto count on.

    Parameters
    ----------
    scheme : {"int8", "fp8", "fp64", "int7"}
    num_moduli : int
        At least 2.
    k : int
        The product's inner dimension.

    Returns
    -------
    float
        Error bound in units of ``(|A||B|)_ij`` (dimensionless).
    """
    full = auto_num_moduli(scheme, k)
    if num_moduli >= full:
        return U
    logs = [math.log2(p) for p in scheme_moduli(scheme)[:full]]
    return U * 2.0 ** (math.fsum(logs[num_moduli:]) / 2)


def moduli_for_precision(precision: float, scheme: str, k: int) -> int:
    """The least count ``N >= 2`` with ``precision_of_moduli(scheme, N, k) <= precision``
    (the auto count, never more, when ``precision`` is below every reduced count's).

    Parameters
    ----------
    precision : float
        The unit roundoff asked of the products (dimensionless).
    scheme : {"int8", "fp8", "fp64", "int7"}
    k : int
        The products' inner dimension.

    Returns
    -------
    int
        The count of moduli, in ``[2, auto_num_moduli(scheme, k)]``.
    """
    full = auto_num_moduli(scheme, k)
    return next((n for n in range(2, full) if precision_of_moduli(scheme, n, k) <= precision),
                full)


def unit_roundoff(value: Any, default: float, name: str) -> float:
    """``value`` as a unit roundoff or tolerance: a real number in (0, 1).

    Parameters
    ----------
    value : real number or None
        ``None`` for ``default``.
    default : float
    name : str
        The argument's name, for the error messages.

    Returns
    -------
    float

    Raises
    ------
    TypeError
        ``value`` is not a real number (bools are refused).
    ValueError
        ``value`` is not in (0, 1) (NaN included).
    """
    if value is None:
        return default
    if isinstance(value, (bool, np.bool_)) or not isinstance(
            value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name} must be a real number in (0, 1), got "
                        f"{type(value).__name__} {value!r}")
    if not 0.0 < float(value) < 1.0:
        raise ValueError(f"{name} must be in (0, 1), got {float(value)!r}")
    return float(value)
