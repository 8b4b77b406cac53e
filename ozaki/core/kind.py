"""The kind of product a call runs: real, or complex on its real embedding.

A complex product ``C = A B`` runs as the real product of its embedding,
``[Ar, Ai] @ [[Br, Bi], [-Bi, Br]] = [Re | Im]``: inner dimension ``2k``, ``2n``
columns, the data of ``B``'s columns tiled over the two halves (:meth:`Kind.tile`)
and the shifts of a column tied across them (:meth:`Kind.tie`); each modular product
is Gauss's three real products (:func:`ozaki.core.products.complex_product`). The
phases read these facts from a :class:`Kind` instead of testing a flag.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

__all__ = ["Kind", "REAL", "COMPLEX", "kind_of"]


def _tie(sigma: np.ndarray, tau: np.ndarray):
    """Real and imaginary columns of one ``B`` column share their shift (the smaller)."""
    n = tau.shape[1] // 2
    return sigma, np.concatenate((np.minimum(tau[:, :n], tau[:, n:]),) * 2, axis=-1)


@dataclass(frozen=True)
class Kind:
    """Real (:data:`REAL`) or complex (:data:`COMPLEX`) products.

    Attributes
    ----------
    complex : bool
        Whether the product is complex (runs on the real embedding).
    width : int
        Columns (and inner terms) of the embedding per column (term) of ``C``: 1 or 2.
    products : int
        Real products per modular product: 1, or Gauss's 3.
    work : int
        Real multiply-adds per complex one: 1 or 4 (``m n k`` terms count ``work`` each).
    """

    complex: bool
    width: int
    products: int
    work: int

    def tile(self, x: np.ndarray) -> np.ndarray:
        """Column data of ``B`` for the embedding's ``[Re | Im]`` columns (``x`` for real)."""
        return np.concatenate((x, x), axis=-1) if self.complex else x

    @property
    def tie(self) -> Callable | None:
        """``tie(sigma, tau)``: the shifts a complex product must share, or ``None``."""
        return _tie if self.complex else None


REAL = Kind(False, 1, 1, 1)
COMPLEX = Kind(True, 2, 3, 4)


def kind_of(is_complex: bool) -> Kind:
    """:data:`COMPLEX` or :data:`REAL`."""
    return COMPLEX if is_complex else REAL
