"""The record of what one call did: :class:`OzakiInfo`."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .moduli import MODULI_VERSION
from .kind import REAL, Kind

__all__ = ["OzakiInfo", "PHASES"]

PHASES = ("scaling", "residues", "products", "reconstruction")


@dataclass
class OzakiInfo:
    """What one call did.

    Attributes
    ----------
    scheme, mode, engine : str
    num_moduli : int
        Moduli used (for a stack: the largest count of its slices).
    slice_moduli : ndarray of int or None
        Per-slice counts of a stacked call (the batch's shape; one entry for a
        single product).
    moduli_version : int
        Version of the moduli tables (results are reproducible per version).
    gemms : int
        Low-precision GEMMs in the unit of the engine (``N``, or ``3N`` for FP8
        digits, plus one for the accurate-mode bound).
    seconds : dict
        Wall time per phase: ``scaling`` (includes the bound GEMM), ``residues``,
        ``products``, ``reconstruction``.
    workspace_bytes : int
        Bytes of the workspace planes this call used.
    bound_kind : str
        ``"componentwise"`` (accurate mode: ``u |AB| + u |A||B|`` per entry) or
        ``"normwise"`` (fast mode: ``u |AB| + u ||a_i||_2 ||b_j||_2``), see
        :mod:`ozaki.core.certify`.
    max_bound_ratio : float
        Largest ratio of the certified error bound to the target over the
        entries: at most 1 when every entry is certified.
    uncertified : int
        Entries whose bound misses the target with the count used. With
        ``fallback="none"`` and no ``bounds``, the cheapest evaluation is
        reported: in fast mode the separable maximum (all entries of a product
        whose maximum misses), in accurate mode the coarse bound (no refinement
        GEMMs).
    fallback : str
        What was done about them: ``"none"`` (values kept), ``"exact"``
        (recomputed by the exactly rounded dot product, :mod:`ozaki.core.fallback`).
    fallback_entries : int
        Uncertified entries replaced by exactly rounded values.
    fallback_block : tuple of int
        ``(rows, columns)`` that hold a fallback entry.
    exact_entries : int
        Entries computed by the exactly rounded dot product: the fallback's and
        those the overflow guard recomputes (``(|A||B|)_ij`` near ``2**1023``).
    refined_block : tuple of int
        ``(rows, columns)`` of the block whose bound was refined with two exact
        FP64 GEMMs (counted in ``gemms``), see :class:`ozaki.core.certify.Refinement`.
    path : str
        ``"emulated"`` (Ozaki Scheme II), or ``"compensated"``: a small product
        with ``num_moduli="auto"`` computed entry by entry by compensated dot
        products (:mod:`ozaki.core.compensated`; ``num_moduli`` and ``gemms`` are 0,
        ``exact_entries`` counts the entries that took the exactly rounded dot
        product instead).
    backend : str
        The backend that ran the call (``"cpu"``, ``"numpy"``: the same bits).
    traffic : ozaki.distributed.traffic.Traffic or None
        The bytes and messages this rank sent, by kind (distributed products
        only; ``None`` for serial ones).
    error_bound : ndarray, shape (m, n), or None
        Per-entry absolute error bound, an upper bound of ``|C_ij - (AB)_ij|``
        rounded upward (only with ``bounds=True``; ``inf`` where it overflows,
        0 for the non-finite values of exact arithmetic).
    """

    scheme: str
    num_moduli: int
    mode: str
    engine: str
    moduli_version: int = MODULI_VERSION
    gemms: int = 0
    seconds: dict[str, float] = field(default_factory=lambda: dict.fromkeys(PHASES, 0.0))
    workspace_bytes: int = 0
    bound_kind: str = ""
    max_bound_ratio: float = 0.0
    uncertified: int = 0
    fallback: str = "none"
    fallback_entries: int = 0
    fallback_block: tuple[int, int] = (0, 0)
    exact_entries: int = 0
    refined_block: tuple[int, int] = (0, 0)
    path: str = "emulated"
    backend: str = "cpu"
    traffic: object | None = field(default=None, repr=False)
    error_bound: np.ndarray | None = field(default=None, repr=False)
    slice_moduli: np.ndarray | None = field(default=None, repr=False)

    @classmethod
    def from_decision(cls, opts, dec, kind: Kind = REAL,
                      copy_bound: bool = False) -> "OzakiInfo":
        """The record of an emulated product from its options and step 1's decision.

        Counts, certificate and GEMMs (step 1's exact GEMMs in accurate mode, then
        one modular product per modulus, Gauss's three for a complex ``kind``); the bound
        is the decision's (a copy with ``copy_bound``: it is finished in place).
        Serial (:func:`ozaki.core.pipeline.emulate`) and distributed products both
        build theirs here.
        """
        from .moduli import MODULI
        from .products import gemms_per_modulus
        N = int(dec.counts.max())
        gemms = kind.products * sum(gemms_per_modulus(opts.engine, p)
                                             for p in MODULI[opts.scheme][:N])
        bound = dec.bound.copy() if copy_bound and dec.bound is not None else dec.bound
        return cls(opts.scheme, N, opts.mode, opts.engine.name,
                   gemms=gemms + (dec.gemms if opts.mode == "accurate" else 0),
                   bound_kind=dec.kind, max_bound_ratio=float(dec.max_ratio.max(initial=0.0)),
                   uncertified=int(dec.uncertified.sum()), refined_block=dec.refined,
                   error_bound=bound, slice_moduli=dec.counts, backend=opts.backend.name)

    @property
    def certified(self) -> bool:
        """Whether every entry meets the target (before any fallback)."""
        return self.uncertified == 0
