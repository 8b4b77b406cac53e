"""Per-rank rates against a calibration profile, measured on every rank at once.

A calibration profile (:mod:`tme_model.profile`) is measured on an idle machine with
all its threads; an MPI job runs one thread per rank, every rank at once, sharing the
memory system.  GEMMs and memory-bound passes do not slow down alike under that sharing,
so :func:`rank_rates` measures, on each rank while all ranks run the same probe
(a barrier before each repetition, the fastest of ``repeats`` kept):

* ``gemm``: a native FP64 GEMM (numpy) of ``shape``, against
  :meth:`~tme_model.profile.Profile.native_gemm_s`;
* with ``scheme``: ``products``, the exact modular products of ``shape`` on random
  residues, one per modulus, as the distributed SUMMA calls them
  (:func:`ozaki.core.products.modular_product`), against ``gemm_s`` of
  :meth:`~tme_model.profile.Profile.predict_gemm`; and one serial ``ozaki.dgemm``
  (fast mode) of ``shape``, its passes against their terms of ``predict_gemm``:
  ``scaling``, ``residues``, ``reconstruction`` and ``passes`` (the three with the
  profile's fixed cost).  The serial call's own products phase is not used: it also
  holds the serial pipeline's store pass, which the SUMMA replaces by its accumulation;
* ``stream``: a one-thread STREAM triad (``a = b + s c``, 24 bytes per element) against
  the profile's ``mem_tbps``.

The factors are the :class:`tme_model.network.RankRates` of this rank (profile time /
measured time; the model divides by them).  Used by :mod:`benchmarks.mpi.summa` and
meant for the other distributed benchmarks.
"""

from __future__ import annotations

import time

import numpy as np

__all__ = ["rank_rates", "stream_triad_bps"]

_TRIAD = None


def _triad():
    global _TRIAD
    if _TRIAD is None:
        import numba

        @numba.njit(cache=False)
        def triad(a, b, c, s):  # pragma: no cover - compiled
            for i in range(a.size):
                a[i] = b[i] + s * c[i]
        _TRIAD = triad
    return _TRIAD


def _fastest(comm, f, repeats: int) -> float:
    """The fastest of ``repeats`` runs of ``f`` (after one untimed), every rank in step."""
    f()
    best = np.inf
    for _ in range(repeats):
        comm.Barrier()
        t0 = time.perf_counter()
        f()
        best = min(best, time.perf_counter() - t0)
    return best


def stream_triad_bps(comm, elements: int = 1 << 22, repeats: int = 3) -> float:
    """Bytes per second of a one-thread STREAM triad on this rank, all ranks at once."""
    triad = _triad()
    a, b, c = np.zeros(elements), np.ones(elements), np.full(elements, 2.0)
    return 24.0 * elements / _fastest(comm, lambda: triad(a, b, c, 3.0), repeats)


def rank_rates(comm, profile, shape=(768, 768, 768), *, scheme: str | None = None,
               num_moduli: int | None = None, engine: str | None = None, repeats: int = 3,
               stream_elements: int = 1 << 22, seed: int = 0,
               products: str = "modular") -> dict:
    """This rank's rates relative to ``profile``, measured while every rank runs.

    Collective: every rank of ``comm`` must call it with the same ``repeats`` and the
    same ``scheme`` given or not (``shape`` may differ: each rank its own block).

    Parameters
    ----------
    comm : mpi4py.MPI.Comm
    profile : tme_model.profile.Profile
    shape : (int, int, int)
        ``(m, k, n)`` of the probe's products (e.g. the rank's local panel product).
    scheme, num_moduli, engine : optional
        Of the emulated product to probe (``info.scheme``, ``info.num_moduli``,
        ``info.engine``); without ``scheme`` only ``gemm`` and ``stream`` are measured.
    repeats : int
        Timed repetitions (the fastest kept, phase by phase).
    stream_elements : int
        Elements of each triad array (the default, 32 MiB each, is larger than the caches).
    seed : int
        Of the random operands (the rank is added).
    products : {"modular", "serial"}
        Where the ``products`` rate comes from: the bare modular products (what the
        distributed SUMMA runs, accumulating them itself), or the serial call's
        ``"products"`` phase, its store pass included (what a serial ``ozaki.dgemm``
        runs, e.g. an FFT stage).

    Returns
    -------
    dict
        ``"rates"``: keyword arguments of :class:`tme_model.network.RankRates` (``gemm``,
        ``stream`` and, with ``scheme``, ``products``, ``scaling``, ``residues``,
        ``reconstruction``, ``passes``); ``"seconds"``: the measured times they come from;
        ``"shape"``, ``"stream_bps"``.
    """
    m, k, n = (int(x) for x in shape)
    if min(m, k, n) < 1 or repeats < 1:
        raise ValueError(f"need a positive shape and repeats, got {shape!r}, {repeats!r}")
    rng = np.random.default_rng(seed + comm.Get_rank())
    A, B = rng.standard_normal((m, k)), rng.standard_normal((k, n))
    sec = {"gemm": _fastest(comm, lambda: A @ B, repeats)}
    rates = {"gemm": profile.native_gemm_s(m, n, k) / sec["gemm"]}
    if scheme is not None:
        import ozaki
        # the pass measured on purpose: the bare modular products the SUMMA runs
        from ozaki.backends import get_backend
        from ozaki.core.products import modular_product

        moduli = ozaki.moduli(scheme)[:int(num_moduli)]
        eng, backend = ozaki.get_engine(engine or "auto", scheme), get_backend()
        if products not in ("modular", "serial"):
            raise ValueError(f"products must be 'modular' or 'serial', got {products!r}")
        if products == "modular":
            h = min(moduli) // 2  # residues of every modulus
            RA = rng.integers(-h, h + 1, (m, k)).astype(np.float64)
            RB = rng.integers(-h, h + 1, (k, n)).astype(np.float64)
            prod = np.empty((m, n))
            sec["products"] = _fastest(comm, lambda: [
                modular_product(backend, eng, RA, RB, q, prod) for q in moduli], repeats)
        phases = ("scaling", "residues", "reconstruction") + (
            ("products",) if products == "serial" else ())
        got = []
        kw = dict(mode="fast", scheme=scheme, num_moduli=int(num_moduli), return_info=True)
        if engine is not None:
            kw["engine"] = engine
        ozaki.dgemm(A, B, **kw)
        for _ in range(repeats):
            comm.Barrier()
            got.append(ozaki.dgemm(A, B, **kw)[1].seconds)
        sec.update({p: min(g[p] for g in got) for p in phases})
        t = profile.predict_gemm(scheme, int(num_moduli), "fast", m, n, k, engine=engine)
        rates.update(products=t.gemm_s / sec["products"], scaling=t.scale_s / sec["scaling"],
                     residues=t.residue_s / sec["residues"],
                     reconstruction=t.recon_s / sec["reconstruction"],
                     passes=(t.scale_s + t.residue_s + t.recon_s + t.fixed_s)
                     / (sec["scaling"] + sec["residues"] + sec["reconstruction"]))
    bps = stream_triad_bps(comm, stream_elements, repeats)
    sec["stream"] = 24.0 * stream_elements / bps
    rates["stream"] = bps / (profile.mem_tbps * 1e12)
    return {"rates": rates, "seconds": sec, "shape": (m, k, n), "stream_bps": bps}
