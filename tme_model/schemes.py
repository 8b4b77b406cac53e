"""Ozaki Scheme II substrates: moduli counts, the compute multiplier alpha, scheme choice.

The scheme facts are ``ozaki``'s, read through its public functions (imported inside
the functions, so that ``import tme_model`` does not load ``ozaki``; :doc:`architecture`,
"Packages and imports"):

* alpha, the exact low-precision GEMMs one emulated FP64 GEMM costs, is the work of the
  calls :func:`ozaki.exact_gemms` lists, on the engine that models the scheme's own
  matrix unit (:data:`UNIT_ENGINES`):

  ============  ===========  ==============
  scheme        fast mode    accurate mode
  ============  ===========  ==============
  ``int8``      N            N + 1
  ``fp8``       3 N          3 N + 1
  ============  ===========  ==============

  (accurate mode adds one exact GEMM on quantised magnitudes to bound the product; each
  FP8 modulus needs three digit GEMMs);
* GEMMs per modulus on any engine: :func:`ozaki.gemms_per_modulus`;
* the moduli count of the ``"2x-native"`` grade: :func:`ozaki.auto_num_moduli`, the count
  ``ozaki.dgemm(num_moduli="auto")`` starts from.

The paths of an FP64 GEMM on a CPU, priced from these, are :mod:`tme_model.cpus`'s.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from .specs import Device, MissingFigureError

__all__ = [
    "GRADES",
    "GRADE_EXTRA_MODULI",
    "MODES",
    "REFERENCE_K",
    "SCHEMES",
    "UNIT_ENGINES",
    "SchemeChoice",
    "alpha_for",
    "candidates",
    "choose_scheme",
    "gemms_per_modulus",
    "moduli_for",
]

#: Substrates the model knows; each runs on the device figure of the same name.  A
#: subset of ``ozaki.SCHEMES`` (its ``fp64`` scheme has no low-precision figure; the
#: tests pin the two together).
SCHEMES: tuple[str, ...] = ("int8", "fp8")
#: Modes of the scaling step: accurate adds one exact bounding GEMM.  The names of
#: ``ozaki.MODES``, in the order the command-line tools show them.
MODES: tuple[str, ...] = ("fast", "accurate")
#: The ``ozaki`` engine that models each scheme's own matrix unit: INT8 with INT32
#: accumulation (``int8``, and ``int7``, whose moduli up to 128 an INT8 unit without
#: VNNI takes in one GEMM), FP8 E4M3 with FP32 accumulation (``fp64``: FP64 BLAS).
#: alpha counts the GEMMs ``ozaki`` runs there.
UNIT_ENGINES: dict[str, str] = {"int8": "cpu-int8", "fp8": "cpu-fp8", "fp64": "cpu-blas",
                                "int7": "cpu-int8"}
#: Moduli each accuracy grade adds to ozaki's automatic count.  "2x-native" is that
#: count (:func:`ozaki.auto_num_moduli`: error no worse than twice native DGEMM's
#: componentwise error, INT8 16, FP8 13 at k <= 4096, more for larger k as ozaki
#: measured).  "certified" is the model's stricter choice, error <= ``u (|A||B|)_ij``
#: certified at phi <= 1: 124-132 bits of P instead of 112-120 (:doc:`algorithm`, "Error bound"),
#: INT8 16-17 and FP8 14-15 moduli at k <= 4096; the upper end is taken, one INT8 and
#: two FP8 moduli above the automatic count, at every k.  The peers' defaults (GEMMul8
#: INT8 14-15 / FP8 10-11, the TME paper's FP8 12) are below FP64 grade by this measure.
GRADE_EXTRA_MODULI: dict[str, dict[str, int]] = {
    "2x-native": {"int8": 0, "fp8": 0},
    "certified": {"int8": 1, "fp8": 2},
}
#: Accuracy grades accepted by :func:`moduli_for`.
GRADES: tuple[str, ...] = tuple(GRADE_EXTRA_MODULI)
#: Inner dimension at which the substrate of a device is compared by default
#: (:func:`choose_scheme`), and at which alpha's work is counted.
REFERENCE_K = 4096


def _check_scheme(scheme: str) -> None:
    if scheme not in SCHEMES:
        raise ValueError(f"scheme must be one of {', '.join(SCHEMES)}, got {scheme!r}")


@lru_cache(maxsize=None)
def _exact_work(scheme: str, moduli: int, mode: str) -> int:
    """Work of ``ozaki.exact_gemms`` on the scheme's unit engine, in full-k GEMMs."""
    import ozaki

    try:
        calls = ozaki.exact_gemms(REFERENCE_K, scheme=scheme, num_moduli=moduli, mode=mode,
                                  engine=UNIT_ENGINES[scheme])
    except ValueError as exc:
        raise ValueError(f"moduli: {exc}") from None
    work, rest = divmod(sum(kc for kc, _, _ in calls), REFERENCE_K)
    if rest:  # pragma: no cover - k-blocks always add up to k
        raise AssertionError(f"ozaki's exact GEMMs for {scheme} do not add up to k")
    return work


def alpha_for(scheme: str, moduli: int, mode: str) -> int:
    """Return the compute multiplier alpha of an ozaki configuration.

    Parameters
    ----------
    scheme : {"int8", "fp8"}
        Low-precision substrate.
    moduli : int
        Number of moduli N, a count ``ozaki`` runs (2 to 20).
    mode : {"fast", "accurate"}
        Scaling mode; accurate adds one exact bounding GEMM.

    Returns
    -------
    int
        Exact low-precision GEMMs per emulated FP64 GEMM, as :func:`ozaki.exact_gemms`
        lists them on the scheme's unit engine (:data:`UNIT_ENGINES`), k-blocks counted
        by their share of k: N or N + 1 (int8), 3N or 3N + 1 (fp8).
    """
    _check_scheme(scheme)
    if mode not in MODES:
        raise ValueError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
    if isinstance(moduli, bool) or int(moduli) != moduli or moduli < 1:
        raise ValueError(f"moduli must be a positive integer, got {moduli!r}")
    return _exact_work(scheme, int(moduli), mode)


@lru_cache(maxsize=None)
def gemms_per_modulus(scheme: str, engine: str | None = None) -> int:
    """Return the exact GEMMs one modulus of a scheme costs on an ``ozaki`` engine.

    Parameters
    ----------
    scheme : str
        An ``ozaki`` scheme (``int8``, ``fp8``, ``fp64``).
    engine : str, optional
        An ``ozaki`` engine that runs the scheme; default the scheme's unit engine
        (:data:`UNIT_ENGINES`).

    Returns
    -------
    int
        :func:`ozaki.gemms_per_modulus`, the same for every modulus of the scheme: 3
        where residues are split into FP8 digits, else 1.
    """
    import ozaki

    if scheme not in ozaki.SCHEMES:
        raise ValueError(f"scheme must be one of {', '.join(ozaki.SCHEMES)}, got {scheme!r}")
    engine = UNIT_ENGINES[scheme] if engine is None else engine
    engines = ozaki.available_engines()
    if engine not in engines:
        raise ValueError(f"engine must be one of {', '.join(engines)}, got {engine!r}")
    return ozaki.gemms_per_modulus(scheme, engine)


def moduli_for(scheme: str, grade: str = "2x-native", k: int = REFERENCE_K) -> int:
    """Return the number of moduli that gives FP64 grade.

    Parameters
    ----------
    scheme : {"int8", "fp8"}
        Low-precision substrate.
    grade : {"2x-native", "certified"}
        Accuracy grade (see :data:`GRADE_EXTRA_MODULI`).
    k : int, optional
        Inner dimension of the product (at least 1).

    Returns
    -------
    int
        :func:`ozaki.auto_num_moduli` at ``k`` plus the grade's extra moduli.
    """
    import ozaki

    _check_scheme(scheme)
    if grade not in GRADE_EXTRA_MODULI:
        raise ValueError(f"grade must be one of {', '.join(GRADES)}, got {grade!r}")
    if isinstance(k, bool) or int(k) != k or k < 1:
        raise ValueError(f"k must be a positive integer, got {k!r}")
    return ozaki.auto_num_moduli(scheme, int(k)) + GRADE_EXTRA_MODULI[grade][scheme]


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
