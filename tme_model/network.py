"""The network term of the TME model: alpha-beta messages, SUMMA's traffic, a network roof.

A message of ``b`` bytes costs ``alpha + b / beta`` (alpha the latency per message,
beta the bandwidth).  The SUMMA of :mod:`ozaki.distributed` (emulated and native alike)
broadcasts, for each k-panel ``[k0, k1)`` of width ``w``, an ``m_p x w`` panel of ``A``
along process row ``p`` and a ``w x n_q`` panel of ``B`` along process column ``q``; the
broadcasts are blocking, so every rank of a row waits for each of the row's broadcasts,
and the communication time of rank ``(p, q)`` is

    T_comm(p, q) = sum over panels of  bcast(8 m_p w, Q) + bcast(8 w n_q, P)

with, for a broadcast of ``b`` bytes over ``s`` ranks,

* ``"flat"`` (the convention of :mod:`ozaki.distributed.traffic`: the root sends to
  each other rank in turn): ``(s - 1) (alpha + b / beta)``;
* ``"scatter-allgather"`` (what MPI libraries do for long messages, van de Geijn):
  ``(log2 s + s - 1) alpha + 2 (s - 1) / s * b / beta``.

The same per-rank traffic, counted in bytes and messages sent, is
:func:`summa_traffic` (it equals ``info.traffic`` of the panel broadcasts exactly).
The **network roof** is the rate at which the network keeps up with the local
products when they overlap perfectly: ``local flops / T_comm``; a rank cannot beat it,
whatever its matrix engine.

Networks come from ``data/networks.toml`` (sourced figures, :func:`load_networks`) or a
calibration of the local MPI (:func:`fit_alpha_beta` on ping-pong times measured by
``mpiexec -n 2 python -m benchmarks.mpi.network``; the timing needs mpi4py, which only
``ozaki.distributed`` and ``benchmarks/mpi`` import).

The **local compute** of a rank (:func:`summa_compute_parts`) comes from a calibration
profile (:class:`~tme_model.profile.Profile`), each term divided by the rank's rate for
that kind of work relative to the profile (:class:`RankRates`, measured by the caller
while every rank runs: ``benchmarks.mpi.probe``): the GEMMs by a GEMM rate, the O(n^2)
passes of the emulation by the rate of the same pass, and the accumulation of each
panel's product into ``C`` (a pass the serial profile does not time) as bytes over the
rank's streaming bandwidth.
"""

from __future__ import annotations

import json
import math
import tomllib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .specs import TMEError

__all__ = ["BCASTS", "Network", "bcast_s", "fit_alpha_beta", "load_network", "load_networks",
           "network_roof_tflops", "panel_widths", "RankRates", "summa_comm_s",
           "summa_compute_parts", "summa_compute_s", "summa_traffic"]

BCASTS = ("flat", "scatter-allgather")
_DATA = Path(__file__).parent / "data" / "networks.toml"


@dataclass(frozen=True)
class Network:
    """An alpha-beta network.

    Attributes
    ----------
    key, name : str
    alpha_s : float
        Latency per message, seconds.
    beta_bps : float
        Bandwidth, bytes per second.
    source : str
        Where the figures come from (citations, or the calibration file).
    """

    key: str
    name: str
    alpha_s: float
    beta_bps: float
    source: str = ""

    def __post_init__(self):
        if not (self.alpha_s >= 0 and self.beta_bps > 0 and math.isfinite(self.alpha_s)
                and math.isfinite(self.beta_bps)):
            raise TMEError(f"network {self.key!r}: need alpha >= 0 and beta > 0, got "
                           f"{self.alpha_s!r}, {self.beta_bps!r}")

    def message_s(self, nbytes: float, messages: float = 1) -> float:
        """``messages alpha + nbytes / beta``, seconds."""
        return messages * self.alpha_s + nbytes / self.beta_bps


def load_networks(path: str | Path | None = None) -> dict[str, Network]:
    """The networks of a TOML file (default: the shipped ``data/networks.toml``)."""
    path = Path(path) if path else _DATA
    data = tomllib.loads(path.read_text())
    sources = data.get("sources", {})
    out = {}
    for key, e in data.get("networks", {}).items():
        cite = " ".join(sources.get(s, s) for s in
                        str(e["beta_gbps"].get("source", "")).strip("[]").split("]["))
        out[key] = Network(key, e.get("name", key), e["alpha_us"]["value"] * 1e-6,
                           e["beta_gbps"]["value"] * 1e9, cite)
    return out


def load_network(spec: str) -> Network:
    """A shipped network by key (``"ndr"``) or a calibration JSON file (``alpha_s``,
    ``beta_bps``, written by ``benchmarks.mpi.network``)."""
    shipped = load_networks()
    if spec in shipped:
        return shipped[spec]
    p = Path(spec)
    if not p.is_file():
        raise TMEError(f"unknown network {spec!r}: not one of {', '.join(shipped)} nor a file")
    d = json.loads(p.read_text())
    try:
        return Network("local", d.get("name", "this machine's MPI (calibrated)"),
                       float(d["alpha_s"]), float(d["beta_bps"]), f"calibration {p}")
    except KeyError as exc:
        raise TMEError(f"{p}: a network calibration needs {exc}") from None


def fit_alpha_beta(nbytes, seconds) -> tuple[float, float]:
    """Least-squares alpha, beta of ``t = alpha + b / beta`` in *relative* error.

    Parameters
    ----------
    nbytes, seconds : array_like
        Message sizes and their one-way times (half a ping-pong round trip).

    Returns
    -------
    alpha_s, beta_bps : float
        Latency (>= 0) and bandwidth.  Relative weights let the small messages set
        alpha and the large ones beta.
    """
    b, t = np.asarray(nbytes, float), np.asarray(seconds, float)
    if b.shape != t.shape or b.size < 2 or np.any(t <= 0) or np.ptp(b) == 0:
        raise ValueError("need at least two distinct sizes with positive times")
    X = np.stack([1.0 / t, b / t], axis=1)  # (alpha + b x) / t = 1
    (alpha, x), *_ = np.linalg.lstsq(X, np.ones_like(t), rcond=None)
    if x <= 0:
        raise ValueError("the times do not grow with the size: no bandwidth to fit")
    return max(float(alpha), 0.0), float(1.0 / x)


def block_bounds(size: int, parts: int) -> np.ndarray:
    i = np.arange(parts + 1, dtype=np.int64)  # the layout of ozaki.distributed.bounds
    return i * (size // parts) + np.minimum(i, size % parts)


def panel_widths(K: int, P: int, Q: int, panel: int) -> list[tuple[int, int, int]]:
    """The k-panels of the distributed SUMMA: ``(width, owner column of A, owner row of B)``.

    The panels of :func:`ozaki.distributed.panels`: the union of ``A``'s column and
    ``B``'s row block edges, cut to at most ``panel`` wide.
    """
    akb, bkb = block_bounds(K, Q), block_bounds(K, P)
    edges = sorted(set(akb.tolist()) | set(bkb.tolist()))
    out = []
    for lo, hi in zip(edges[:-1], edges[1:]):
        for s in range(lo, hi, panel):
            out.append((min(hi, s + panel) - s, int(np.searchsorted(akb, s, "right") - 1),
                        int(np.searchsorted(bkb, s, "right") - 1)))
    return out


def summa_traffic(M: int, N: int, K: int, P: int, Q: int, panel: int):
    """Bytes and messages each rank sends in the panel broadcasts (flat convention).

    Returns
    -------
    nbytes, messages : ndarray of int, shape (P, Q)
        Entry ``(p, q)`` is what rank ``p Q + q`` sends: ``(Q - 1)`` copies of each
        ``A`` panel it owns and ``(P - 1)`` of each ``B`` panel.
    """
    mb, nb = np.diff(block_bounds(M, P)), np.diff(block_bounds(N, Q))
    nbytes = np.zeros((P, Q), np.int64)
    msgs = np.zeros((P, Q), np.int64)
    for w, qa, pb in panel_widths(K, P, Q, panel):
        nbytes[:, qa] += (Q - 1) * 8 * mb * w
        msgs[:, qa] += Q - 1
        nbytes[pb, :] += (P - 1) * 8 * w * nb
        msgs[pb, :] += P - 1
    return nbytes, msgs


def bcast_s(net: Network, nbytes: float, size: int, algorithm: str = "flat") -> float:
    """Time of one broadcast of ``nbytes`` over ``size`` ranks (see the module docstring)."""
    if size <= 1:
        return 0.0
    if algorithm == "flat":
        return (size - 1) * net.message_s(nbytes)
    if algorithm == "scatter-allgather":
        return ((math.log2(size) + size - 1) * net.alpha_s
                + 2.0 * (size - 1) / size * nbytes / net.beta_bps)
    raise ValueError(f"algorithm must be one of {', '.join(BCASTS)}, got {algorithm!r}")


def summa_comm_s(net: Network, M: int, N: int, K: int, P: int, Q: int, panel: int,
                 algorithm: str = "flat") -> float:
    """The largest ``T_comm(p, q)`` over the grid, seconds (module docstring)."""
    mb, nb = np.diff(block_bounds(M, P)), np.diff(block_bounds(N, Q))
    widths = [w for w, _, _ in panel_widths(K, P, Q, panel)]
    row = max(sum(bcast_s(net, 8.0 * m * w, Q, algorithm) for w in widths) for m in mb)
    col = max(sum(bcast_s(net, 8.0 * w * n, P, algorithm) for w in widths) for n in nb)
    return row + col  # the largest block row and column meet at one rank


def network_roof_tflops(net: Network, M: int, N: int, K: int, P: int, Q: int, panel: int,
                        algorithm: str = "flat") -> float:
    """Per-rank FP64 rate the network sustains (perfect overlap), TFLOP/s."""
    t = summa_comm_s(net, M, N, K, P, Q, panel, algorithm)
    flops = 2.0 * M * N * K / (P * Q)
    return math.inf if t == 0 else flops / t / 1e12


@dataclass(frozen=True)
class RankRates:
    """One rank's speed relative to a calibration profile, kind of work by kind of work.

    Each factor is the profile's time for a piece of work over the time the rank took for
    it, measured while every rank of the job runs (one thread each, sharing the memory
    system): times predicted from the profile divide by it.  A GEMM and a memory-bound
    pass slow down differently when the other cores are busy (and a profile calibrated
    with several threads is faster for the GEMMs than for the passes), so one factor
    cannot serve both.

    Attributes
    ----------
    gemm : float
        Native FP64 GEMM (numpy), against :meth:`~tme_model.profile.Profile.native_gemm_s`.
    products : float
        ``ozaki``'s exact GEMMs (its ``"products"`` phase), against
        :meth:`~tme_model.profile.Profile.predict_gemm`'s ``gemm_s``.
    scaling, residues, reconstruction : float
        ``ozaki``'s O(n^2) passes, each against its own term of ``predict_gemm``.
    passes : float
        The three passes together, the profile's fixed cost included (it scales ``fixed_s``).
    stream : float
        Bandwidth of a streaming pass (STREAM triad) over the profile's ``mem_tbps``.
    """

    gemm: float = 1.0
    products: float = 1.0
    scaling: float = 1.0
    residues: float = 1.0
    reconstruction: float = 1.0
    passes: float = 1.0
    stream: float = 1.0

    def __post_init__(self):
        for k, v in self.__dict__.items():
            if not (isinstance(v, (int, float)) and math.isfinite(v) and v > 0):
                raise TMEError(f"RankRates.{k} must be a positive finite number, got {v!r}")

    @classmethod
    def uniform(cls, speed: float) -> "RankRates":
        """Every kind of work at ``speed`` times the profile's rate."""
        return cls(*([float(speed)] * 7))


def summa_compute_parts(profile, m: int, n: int, K: int, widths, emulated: bool, *,
                        scheme: str = "fp64", moduli: int = 0, engine: str | None = None,
                        rates: RankRates | float = 1.0,
                        local_k: tuple[int, int] | None = None) -> dict[str, float]:
    """Local compute of one rank's SUMMA (real, fast mode), by term, seconds.

    Parameters
    ----------
    profile : tme_model.profile.Profile
    m, n : int
        The rank's block of ``C``.
    K : int
        Inner dimension.
    widths : sequence of int
        Panel widths (one local GEMM of ``m x w x n`` each, at the size rate of that shape).
    emulated : bool
        Emulated (``ozaki.distributed.dgemm``, fast mode) or native SUMMA.
    scheme, moduli, engine
        Of the emulated call (``info.scheme``, ``info.num_moduli``, ``info.engine``).
    rates : RankRates or float
        This rank's rates relative to the profile (a float: the same for every kind of work).
    local_k : (int, int), optional
        Columns of the rank's block of ``A`` and rows of its block of ``B`` (the scaling
        pass reads the local blocks); default ``(K, K)``, one rank.

    Returns
    -------
    dict of str to float
        Native: ``"gemms"`` (``native_gemm_s`` per panel / ``rates.gemm``).  Emulated:
        ``"products"`` (``gemm_s`` of ``predict_gemm`` per panel / ``rates.products``),
        ``"scaling"`` (the scaling coefficient times the local elements
        ``m ka + kb n`` / ``rates.scaling``), ``"residues"`` (of every received panel:
        N (mK + Kn) elements / ``rates.residues``), ``"reconstruction"`` (N mn /
        ``rates.reconstruction``), ``"fixed"`` (``fixed_s / rates.passes``).  Both:
        ``"accumulation"``, the pass that adds each panel's product into ``C`` (native
        ``C += P``: 24 bytes per entry and panel; emulated, per modulus, ``acc = smod(P)``
        on the first panel, 16 bytes, ``acc += smod(P)`` on the others, 24 bytes), at
        ``profile.mem_tbps * rates.stream``.
    """
    r = rates if isinstance(rates, RankRates) else RankRates.uniform(rates)
    widths = [int(w) for w in widths]
    if not (m and n and K and widths):
        return {"gemms": 0.0, "accumulation": 0.0} if not emulated else dict.fromkeys(
            ("products", "accumulation", "scaling", "residues", "reconstruction", "fixed"), 0.0)
    bandwidth = profile.mem_tbps * 1e12 * r.stream
    if not emulated:
        return {"gemms": sum(profile.native_gemm_s(m, n, w) for w in widths) / r.gemm,
                "accumulation": 24.0 * m * n * len(widths) / bandwidth}
    ka, kb = local_k if local_k is not None else (K, K)
    t = profile.predict_gemm(scheme, moduli, "fast", m, n, K, engine=engine)
    gemm = sum(profile.predict_gemm(scheme, moduli, "fast", m, n, w, engine=engine).gemm_s
               for w in widths)
    return {"products": gemm / r.products,
            "accumulation": moduli * 8.0 * m * n * (2 + 3 * (len(widths) - 1)) / bandwidth,
            "scaling": t.scale_s * (m * ka + kb * n) / (m * K + K * n) / r.scaling,
            "residues": t.residue_s / r.residues,
            "reconstruction": t.recon_s / r.reconstruction,
            "fixed": t.fixed_s / r.passes}


def summa_compute_s(profile, m: int, n: int, K: int, widths, emulated: bool, **kw) -> float:
    """The sum of :func:`summa_compute_parts` (same arguments), seconds."""
    return sum(summa_compute_parts(profile, m, n, K, widths, emulated, **kw).values())
