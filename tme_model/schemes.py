"""Ozaki Scheme II substrates: moduli counts, the compute multiplier alpha, scheme choice.

alpha is the number of exact low-precision GEMMs one emulated FP64 GEMM costs, counted
the way ``ozaki`` runs them (DESIGN.md sections 3 and 4):

============  ===========  ==============
scheme        fast mode    accurate mode
============  ===========  ==============
``int8``      N            N + 1
``fp8``       3 N          3 N + 1
============  ===========  ==============

(accurate mode adds one exact GEMM on quantised magnitudes to bound the product; each
FP8 modulus needs three digit GEMMs).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .specs import Device, MissingFigureError

__all__ = [
    "GEMMS_PER_MODULUS",
    "GRADES",
    "MODES",
    "MODULI_FOR_GRADE",
    "SCHEMES",
    "SchemeChoice",
    "alpha_for",
    "candidates",
    "choose_scheme",
    "moduli_for",
]

#: Substrates the model knows; each runs on the device figure of the same name.
SCHEMES: tuple[str, ...] = ("int8", "fp8")
#: Exact low-precision GEMMs per modulus (fp8: three digit products, DESIGN section 3).
GEMMS_PER_MODULUS: dict[str, int] = {"int8": 1, "fp8": 3}
#: Modes of the scaling step: accurate adds one exact bounding GEMM.
MODES: tuple[str, ...] = ("fast", "accurate")

#: Moduli needed for FP64 grade at inner dimension k <= 4096, from DESIGN.md section 3
#: ("Error bound": bits of P needed, measured at m = n = 32, k = 4096, exact ``|A||B|``
#: bound).  "2x-native": error no worse than twice native DGEMM's componentwise error
#: (112-120 bits: INT8 16, FP8 13).  "certified": error <= ``u (|A||B|)_ij`` certified at
#: phi <= 1 (124-132 bits: INT8 16-17, FP8 14-15; the upper end is taken here).  The
#: peers' defaults (GEMMul8 INT8 14-15 / FP8 10-11, the TME paper's FP8 12) are below
#: FP64 grade by this measure.
MODULI_FOR_GRADE: dict[str, dict[str, int]] = {
    "2x-native": {"int8": 16, "fp8": 13},
    "certified": {"int8": 17, "fp8": 15},
}
#: Accuracy grades accepted by :func:`moduli_for`.
GRADES: tuple[str, ...] = tuple(MODULI_FOR_GRADE)
#: Inner dimension up to which :data:`MODULI_FOR_GRADE` was measured.
REFERENCE_K = 4096
#: Conservative (low) bits per modulus beyond the tabulated counts, for k > 4096: the
#: next INT8 moduli are ~7.6 bits (191, 181, ...), the next FP8 ones ~8.8 bits (457, ...).
_BITS_PER_EXTRA_MODULUS = {"int8": 7.5, "fp8": 8.8}


def _check_scheme(scheme: str) -> None:
    if scheme not in SCHEMES:
        raise ValueError(f"scheme must be one of {', '.join(SCHEMES)}, got {scheme!r}")


def alpha_for(scheme: str, moduli: int, mode: str) -> int:
    """Return the compute multiplier alpha of an ozaki configuration.

    Parameters
    ----------
    scheme : {"int8", "fp8"}
        Low-precision substrate.
    moduli : int
        Number of moduli N, at least 1.
    mode : {"fast", "accurate"}
        Scaling mode; accurate adds one exact bounding GEMM.

    Returns
    -------
    int
        Exact low-precision GEMMs per emulated FP64 GEMM: N or N + 1 (int8), 3N or
        3N + 1 (fp8).
    """
    _check_scheme(scheme)
    if mode not in MODES:
        raise ValueError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
    if int(moduli) != moduli or moduli < 1:
        raise ValueError(f"moduli must be a positive integer, got {moduli!r}")
    return GEMMS_PER_MODULUS[scheme] * int(moduli) + (1 if mode == "accurate" else 0)


def moduli_for(scheme: str, grade: str = "2x-native", k: int = REFERENCE_K) -> int:
    """Return the number of moduli that gives FP64 grade.

    Parameters
    ----------
    scheme : {"int8", "fp8"}
        Low-precision substrate.
    grade : {"2x-native", "certified"}
        Accuracy grade (see :data:`MODULI_FOR_GRADE`).
    k : int, optional
        Inner dimension of the product.  Counts are measured at k <= 4096; above, the
        product bound grows by log2(k / 4096) bits and moduli are added to cover them
        (an extrapolation, conservative in bits per modulus).

    Returns
    -------
    int
        Number of moduli N.
    """
    _check_scheme(scheme)
    if grade not in MODULI_FOR_GRADE:
        raise ValueError(f"grade must be one of {', '.join(GRADES)}, got {grade!r}")
    n = MODULI_FOR_GRADE[grade][scheme]
    if k > REFERENCE_K:
        n += math.ceil(math.log2(k / REFERENCE_K) / _BITS_PER_EXTRA_MODULUS[scheme])
    return n


@dataclass(frozen=True)
class SchemeChoice:
    """A substrate chosen for a device.

    Attributes
    ----------
    scheme : str
        ``"int8"`` or ``"fp8"``.
    moduli : int
        Number of moduli N.
    mode : str
        ``"fast"`` or ``"accurate"``.
    alpha : int
        Compute multiplier.
    plow : float
        The substrate's peak, TFLOP/s (TOP/s for INT8).
    ceiling : float
        Emulated FP64 ceiling Plow / alpha, TFLOP/s.
    """

    scheme: str
    moduli: int
    mode: str
    alpha: int
    plow: float
    ceiling: float


def candidates(device: Device, k: int = REFERENCE_K, grade: str = "2x-native",
               mode: str = "accurate") -> list[SchemeChoice]:
    """Return every substrate the device has, at the grade's moduli count.

    Parameters
    ----------
    device : Device
        The hardware.
    k : int, optional
        Inner dimension (see :func:`moduli_for`).
    grade : str, optional
        Accuracy grade.
    mode : str, optional
        Scaling mode.

    Returns
    -------
    list of SchemeChoice
        One per scheme whose peak is known, in :data:`SCHEMES` order.
    """
    out = []
    for scheme in SCHEMES:
        plow = device.get(scheme)
        if plow is None:
            continue
        n = moduli_for(scheme, grade, k)
        a = alpha_for(scheme, n, mode)
        out.append(SchemeChoice(scheme, n, mode, a, plow, plow / a))
    return out


def choose_scheme(device: Device, k: int = REFERENCE_K, grade: str = "2x-native",
                  mode: str = "accurate") -> SchemeChoice:
    """Pick the substrate with the highest emulated FP64 ceiling Plow / alpha.

    Parameters
    ----------
    device : Device
        The hardware.
    k : int, optional
        Inner dimension (see :func:`moduli_for`).
    grade : str, optional
        Accuracy grade.
    mode : str, optional
        Scaling mode.

    Returns
    -------
    SchemeChoice
        The best substrate; on a tie the one with the smaller alpha (less overhead).

    Raises
    ------
    MissingFigureError
        If the device has neither an INT8 nor an FP8 figure.
    """
    found = candidates(device, k, grade, mode)
    if not found:
        raise MissingFigureError(
            f"device {device.key!r} has no known INT8 or FP8 peak, so emulation cannot be "
            "modelled; give one with --specs FILE"
            + (" (or use paper:r200)" if device.key == "rubin" else "")
        )
    return max(found, key=lambda c: (c.ceiling, -c.alpha))
