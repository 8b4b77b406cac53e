"""Workloads: the FP64 kernels the model evaluates (work W, traffic Q, outputs n_out, k).

First-principles counts are the default: compulsory DRAM traffic (every operand read
once, every result written once, 8-byte words, 4-byte indices), standard flop counts.
The TME paper's intensities (dense GEMM 50, batched GEMV 4 and 1.5, 7-point stencil 0.5,
SpMV 0.2, 3-D FFT 1.56 FLOP/byte) are kept apart in :data:`PAPER_INTENSITY`, used only by
its presets and labelled as such.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace

__all__ = [
    "DEFAULT_KERNELS",
    "PAPER_INTENSITY",
    "Kernel",
    "catalog",
    "dense_gemm",
    "fft3d",
    "gemv",
    "intensity_kernel",
    "parse_kernel",
    "spmv",
    "stencil7",
]

#: The kernels a table or plot shows by default, in order.
DEFAULT_KERNELS: tuple[str, ...] = ("dgemm", "gemv-b8", "gemv-b2", "stencil7", "spmv", "fft3d")
#: The TME paper's kernel intensities in FLOP/byte (arXiv:2606.06510; :doc:`tme_model`, "Kernels").
PAPER_INTENSITY: dict[str, float] = {
    "dgemm": 50.0, "gemv-b8": 4.0, "gemv-b2": 1.5, "stencil7": 0.5, "spmv": 0.2, "fft3d": 1.56,
}
_WORD = 8  # bytes per FP64 value
_INDEX = 4  # bytes per int32 index


@dataclass(frozen=True)
class Kernel:
    """An FP64 kernel as the TME model sees it.

    Attributes
    ----------
    name : str
        Catalog name, e.g. ``"dgemm"`` or ``"dgemm:1024x2048x512"``.
    flops : float
        W, FP64 flops of the native algorithm.
    bytes : float
        Q, bytes of memory traffic (same for native and emulated at beta = 1).
    n_out : float
        Output elements an emulation reconstructs (the gamma term counts them).
    k : int
        Inner dimension of the emulated products (sets the moduli count).
    matrix : bool
        ``True`` if the native kernel may use FP64 matrix units (GEMM).
    gemm_flops : float or None
        FP64-equivalent flops the emulation performs as GEMMs, where the emulated
        algorithm does more work than the native one (the FFT's dense DFT matrices);
        ``None``: the same as ``flops`` (see :attr:`emulated_flops`).
    n_in : float
        Input elements an emulation converts to residues.
    intensity_source : str
        ``"first principles"`` or the publication the intensity comes from.
    description : str
        One line on what is counted.
    """

    name: str
    flops: float
    bytes: float
    n_out: float
    k: int
    matrix: bool = False
    gemm_flops: float | None = None
    n_in: float = 0.0
    intensity_source: str = "first principles"
    description: str = ""

    def __post_init__(self) -> None:
        for attr in ("flops", "bytes"):
            v = getattr(self, attr)
            if not (math.isfinite(v) and v > 0):
                raise ValueError(f"kernel {self.name!r}: {attr} must be positive, got {v}")
        if self.n_out < 0 or self.n_in < 0:
            raise ValueError(f"kernel {self.name!r}: n_out and n_in must be >= 0")
        g = self.gemm_flops
        if g is not None and not (math.isfinite(g) and g > 0):
            raise ValueError(f"kernel {self.name!r}: gemm_flops must be positive or None, got {g}")

    @property
    def intensity(self) -> float:
        """Arithmetic intensity I = W / Q in FLOP/byte."""
        return self.flops / self.bytes

    @property
    def emulated_flops(self) -> float:
        """FP64-equivalent flops of the emulated GEMMs: ``gemm_flops``, or ``flops``."""
        return self.flops if self.gemm_flops is None else self.gemm_flops

    @property
    def work_ratio(self) -> float:
        """Emulated GEMM work over native work, ``emulated_flops / flops`` (>= 1 usually)."""
        return self.emulated_flops / self.flops

    def with_intensity(self, intensity: float, source: str) -> "Kernel":
        """Return a copy with W rescaled to a given intensity (Q, n_out, k kept).

        Parameters
        ----------
        intensity : float
            I in FLOP/byte, positive.
        source : str
            Where the intensity comes from (shown in tables).

        Returns
        -------
        Kernel
            The copy; its emulated work equals its native work.
        """
        _check_intensity(intensity)
        w = intensity * self.bytes
        return replace(self, flops=w, gemm_flops=None, intensity_source=source)


def _check_intensity(intensity: float) -> None:
    if not (math.isfinite(intensity) and intensity > 0):
        raise ValueError(f"intensity must be positive (FLOP/byte), got {intensity}")


def dense_gemm(m: int = 16384, n: int | None = None, k: int | None = None) -> Kernel:
    """C = A B with A (m x k), B (k x n); square n = k = m when omitted.

    Parameters
    ----------
    m, n, k : int
        Matrix dimensions.

    Returns
    -------
    Kernel
        W = 2mnk, Q = 8 (mk + kn + mn), n_out = mn.
    """
    n = m if n is None else n
    k = m if k is None else k
    name = "dgemm" if (m, n, k) == (16384,) * 3 else (
        f"dgemm:{m}" if m == n == k else f"dgemm:{m}x{n}x{k}")
    return Kernel(name, 2.0 * m * n * k, _WORD * (m * k + k * n + m * n), m * n, k,
                  matrix=True, n_in=m * k + k * n,
                  description=f"{m}x{k} times {k}x{n}, A and B read once, C written once")


def gemv(batch: int, m: int = 16384, n: int = 16384) -> Kernel:
    """Batched GEMV y_j = A x_j, j < batch, sharing one m x n matrix A.

    Parameters
    ----------
    batch : int
        Number of vectors B.
    m, n : int
        Matrix dimensions.

    Returns
    -------
    Kernel
        W = 2mnB, Q = 8 (mn + B (m + n)): I -> B/4 for large m, n.
    """
    return Kernel(f"gemv-b{batch}", 2.0 * m * n * batch, _WORD * (m * n + batch * (m + n)),
                  m * batch, n, n_in=m * n + n * batch,
                  description=f"{m}x{n} matrix read once, {batch} vectors in and out")


def stencil7(n: int = 512) -> Kernel:
    """7-point constant-coefficient stencil sweep on an n^3 grid.

    Parameters
    ----------
    n : int
        Grid edge.

    Returns
    -------
    Kernel
        8 flops (5 + 1 adds for the neighbour sum and centre, 2 multiplies) and 16 bytes
        (read u, write v; neighbours from cache) per point: I = 0.5.
    """
    pts = float(n) ** 3
    name = "stencil7" if n == 512 else f"stencil7:{n}"
    return Kernel(name, 8.0 * pts, 2.0 * _WORD * pts, pts, 7, n_in=pts,
                  description=f"{n}^3 grid, one read and one write per point")


def spmv(rows: int = 1 << 24, nnz_per_row: int = 27) -> Kernel:
    """CSR sparse matrix-vector product y = A x.

    Parameters
    ----------
    rows : int
        Matrix rows (= columns).
    nnz_per_row : int
        Non-zeros per row (27: a 3-D 27-point operator).

    Returns
    -------
    Kernel
        W = 2 nnz; Q = 12 nnz (value and int32 column index) + 20 rows (row pointer,
        x once, y once): I ~ 0.157 at 27 non-zeros per row.
    """
    nnz = float(rows) * nnz_per_row
    name = "spmv" if (rows, nnz_per_row) == (1 << 24, 27) else f"spmv:{rows}x{nnz_per_row}"
    return Kernel(name, 2.0 * nnz, (_WORD + _INDEX) * nnz + (_INDEX + 2 * _WORD) * rows,
                  rows, nnz_per_row, n_in=nnz + rows,
                  description=f"{rows} rows, {nnz_per_row} non-zeros per row, CSR int32")


def fft3d(n: int = 1024, n1: int = 32) -> Kernel:
    """Complex 3-D FFT of n^3 points, each 1-D transform by Bailey's four-step method.

    Parameters
    ----------
    n : int
        Points per axis (a power of two).
    n1 : int
        First Bailey factor; n = n1 * n2.  Each factor's DFT over a batch is a GEMM
        with a dense (n_i x n_i) complex DFT matrix, inner dimension n_i.

    Returns
    -------
    Kernel
        Native: W = 5 N log2 N (N = n^3), Q = 3 axes x (read + write) x 16 bytes x N =
        96 N bytes (I = 1.5625 at n = 1024).  Emulated: gemm_flops = 3 x 8 N (n1 + n2)
        (complex multiply-adds in the dense DFT products, 10x the FFT count at n = 1024),
        n_out = 3 axes x 2 stages x 2 N real outputs, k = max(n1, n2): small k makes the
        reconstruction (gamma) dominate.  Twiddle multiplies (6 N per axis) are not
        counted.
    """
    n2 = n // n1
    if n1 * n2 != n:
        raise ValueError(f"fft3d: n1 = {n1} must divide n = {n}")
    pts = float(n) ** 3
    name = "fft3d" if (n, n1) == (1024, 32) else f"fft3d:{n}"
    return Kernel(name, 5.0 * pts * math.log2(pts), 6.0 * 2 * _WORD * pts, 12.0 * pts,
                  max(n1, n2), gemm_flops=24.0 * pts * (n1 + n2), n_in=12.0 * pts,
                  description=f"{n}^3 complex, Bailey {n1}x{n2} per axis, 6 passes over memory")


def intensity_kernel(intensity: float, matrix: bool = False) -> Kernel:
    """A kernel defined by its intensity alone (1 GB of traffic, no outputs counted).

    Parameters
    ----------
    intensity : float
        I in FLOP/byte, positive.
    matrix : bool, optional
        Whether the native kernel may use FP64 matrix units.

    Returns
    -------
    Kernel
        Named ``"I=<intensity>"``.
    """
    _check_intensity(intensity)
    q = 1e9
    return Kernel(f"I={intensity:g}", intensity * q, q, 0.0, 0, matrix=matrix,
                  intensity_source="given", description="given intensity")


_SIZE = r"(\d+)(?:x(\d+)(?:x(\d+))?)?"


def parse_kernel(spec: str) -> Kernel:
    """Build a first-principles kernel from a name with an optional size.

    Parameters
    ----------
    spec : str
        ``dgemm``, ``dgemm:N`` (square), ``dgemm:MxNxK``, ``gemv-bB`` (any batch B,
        optionally ``:MxN``), ``stencil7[:N]``, ``spmv[:ROWSxNNZ]``, ``fft3d[:N]``.

    Returns
    -------
    Kernel
        The kernel.
    """
    name, _, size = spec.strip().lower().partition(":")
    dims: list[int] = []
    if size:
        match = re.fullmatch(_SIZE, size)
        if not match:
            raise ValueError(f"kernel {spec!r}: size must look like N or MxN or MxNxK")
        dims = [int(d) for d in match.groups() if d is not None]
        if any(d <= 0 for d in dims):
            raise ValueError(f"kernel {spec!r}: sizes must be positive")
    gemv_match = re.fullmatch(r"gemv-b(\d+)", name)
    if name == "dgemm":
        return dense_gemm(*dims) if len(dims) in (0, 1, 3) else _bad(spec, "N or MxNxK")
    if gemv_match and int(gemv_match.group(1)) > 0:
        return gemv(int(gemv_match.group(1)), *dims) if len(dims) in (0, 2) else _bad(spec, "MxN")
    simple = {"stencil7": (stencil7, 1), "spmv": (spmv, 2), "fft3d": (fft3d, 1)}
    if name in simple:
        fn, nd = simple[name]
        return fn(*dims) if len(dims) in (0, nd) else _bad(spec, "x".join(["N"] * nd))
    known = ", ".join(DEFAULT_KERNELS)
    raise ValueError(f"unknown kernel {spec!r}; known: {known} (gemv-bB for any batch B)")


def _bad(spec: str, form: str) -> Kernel:
    raise ValueError(f"kernel {spec!r}: size must be {form}")


def catalog(names: tuple[str, ...] | list[str] = DEFAULT_KERNELS, paper: bool = False) -> list[Kernel]:
    """Return kernels by name, with first-principles or the paper's intensities.

    Parameters
    ----------
    names : sequence of str, optional
        Kernel specs (see :func:`parse_kernel`).
    paper : bool, optional
        Use the TME paper's intensities (:data:`PAPER_INTENSITY`) for the kernels it
        lists; W is rescaled so that I matches, Q, n_out and k are kept, and the
        emulated work equals the native work (the paper's reading).

    Returns
    -------
    list of Kernel
        In the order given.
    """
    out = []
    for spec in names:
        kern = parse_kernel(spec)
        if paper and kern.name in PAPER_INTENSITY:
            kern = kern.with_intensity(PAPER_INTENSITY[kern.name], "TME paper (arXiv:2606.06510)")
        out.append(kern)
    return out
