"""Calibration profiles: measured rates of this machine, shown as device ``local``.

``tme-calibrate`` (:mod:`tme_model.calibration`) measures a profile; ``--profile FILE`` of
``tme-plot`` and ``tme-table`` reads it.  The file format is defined by
:func:`tme_model.profile_file.load_profile`.  Besides the device figures, a profile
holds the costs of ozaki's O(n^2) phases, so that the time of a real (unfused) library
call can be predicted by :meth:`Profile.predict_gemm`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from .schemes import MODES, SCHEMES, gemms_per_modulus
from .specs import Device, Figure, TMEError

__all__ = ["GemmTime", "PhaseCosts", "Profile", "gemm_paths"]


@dataclass(frozen=True)
class PhaseCosts:
    """Per-phase cost coefficients of one scheme, seconds.

    Attributes
    ----------
    scale_s_per_element : float
        Scaling (shift choice and truncation) per input element, independent of N.
    accurate_scale_s_per_element : float
        Extra scaling cost per input element in accurate mode (quantising the operands
        for the bound GEMM; the bound GEMM itself is counted as an exact GEMM).
    residue_s_per_element_modulus : float
        Residue generation per input element and modulus: N (mk + kn) elements.
    recon_s_per_output_modulus : float
        Reconstruction per output element and modulus: N mn (gamma = this times N).
    fixed_s : float
        Fixed cost per call.
    """

    scale_s_per_element: float = 0.0
    accurate_scale_s_per_element: float = 0.0
    residue_s_per_element_modulus: float = 0.0
    recon_s_per_output_modulus: float = 0.0
    fixed_s: float = 0.0


@dataclass(frozen=True)
class GemmTime:
    """Predicted time of one ``ozaki.dgemm`` call, by phase, seconds.

    Attributes
    ----------
    scale_s, residue_s, gemm_s, recon_s, fixed_s : float
        Scaling, residue generation, exact low-precision GEMMs (the accurate-mode bound
        GEMM included: ``ozaki`` books it under its "scaling" phase), reconstruction,
        fixed.
    """

    scale_s: float
    residue_s: float
    gemm_s: float
    recon_s: float
    fixed_s: float

    @property
    def total_s(self) -> float:
        """Sum of the phases, seconds."""
        return self.scale_s + self.residue_s + self.gemm_s + self.recon_s + self.fixed_s


@dataclass(frozen=True)
class Profile:
    """A loaded calibration profile (see :func:`load_profile` for the file format).

    Attributes
    ----------
    name : str
        Device key it is shown as (default ``"local"``).
    fp64_tflops : float
        Native FP64 GEMM rate, TFLOP/s (asymptotic: large n, see ``fp64_n0``).
    fp64_vector_tflops : float
        Native FP64 rate of non-GEMM code, TFLOP/s.
    mem_tbps : float
        Memory bandwidth (STREAM triad), TB/s.
    lowp_tflops : dict of str to dict of str to float
        Scheme -> engine -> rate of one exact low-precision GEMM as the engine runs it
        (2mnk per second), TFLOP/s (asymptotic, see ``lowp_n0``).
    phases : dict of str to PhaseCosts
        Scheme -> per-phase costs.
    meta : dict
        The other top-level keys (description, created, host, calibration), as read;
        never modified (derive a new profile with :func:`dataclasses.replace`).
    path : str
        File it was read from.
    fp64_n0 : float
        Size efficiency of native GEMM: the rate at size s = (mnk)^(1/3) is
        ``fp64_tflops * s / (s + fp64_n0)`` (0: constant rate).
    lowp_n0 : dict of str to dict of str to float
        Scheme -> engine -> the same for the exact GEMMs (missing: 0).
    gemms_per_modulus : dict of str to dict of str to int
        Scheme -> engine -> exact GEMMs per modulus as the engine runs it (missing: the
        scheme's own count, :func:`~tme_model.schemes.gemms_per_modulus`: int8 1, fp8
        3, fp64 1).  ``cpu-blas`` runs an FP8-scheme modulus in one FP64 GEMM, not three
        digit GEMMs.
    fp32_tflops : dict of str to float
        Engine -> rate of its FP32 path, TFLOP/s (asymptotic, see ``fp32_n0``): the
        blocks whose exact bound FP32 holds (``cpu-blas``: at most ``2**24``, SGEMM).
        With it, :meth:`predict_gemm` times each GEMM ``ozaki`` runs at the rate of
        its own path.
    fp32_n0 : dict of str to float
        Engine -> the size efficiency of the FP32 path, as ``fp64_n0`` (missing: 0).
    """

    name: str
    fp64_tflops: float
    fp64_vector_tflops: float
    mem_tbps: float
    lowp_tflops: Mapping[str, Mapping[str, float]]
    phases: Mapping[str, PhaseCosts] = field(default_factory=dict)
    meta: Mapping[str, Any] = field(default_factory=dict)
    path: str = ""
    fp64_n0: float = 0.0
    lowp_n0: Mapping[str, Mapping[str, float]] = field(default_factory=dict)
    gemms_per_modulus: Mapping[str, Mapping[str, int]] = field(default_factory=dict)
    fp32_tflops: Mapping[str, float] = field(default_factory=dict)
    fp32_n0: Mapping[str, float] = field(default_factory=dict)

    def gemms_per(self, scheme: str, engine: str) -> int:
        """Exact GEMMs one modulus costs on ``engine`` (see ``gemms_per_modulus``)."""
        own = self.gemms_per_modulus.get(scheme, {}).get(engine)
        return int(own) if own is not None else gemms_per_modulus(scheme)

    def effective_tflops(self, scheme: str, engine: str) -> float:
        """Rate of an engine in units of the scheme's own GEMMs (FP8: digit GEMMs), TFLOP/s.

        An engine that does a modulus in fewer GEMMs than the scheme's count (``cpu-blas``
        on ``fp8``: 1 instead of 3) counts as proportionally faster, so that the TME
        model's alpha (3N or 3N + 1 for FP8) gives the right product time.
        """
        rate, own, g = self.lowp_tflops[scheme][engine], gemms_per_modulus(scheme), self.gemms_per(scheme, engine)
        return rate if g == own else rate * own / g

    def gemm_tflops(self, scheme: str | None, engine: str | None, m: int, n: int, k: int,
                    fp32: bool = False) -> float:
        """Rate of one GEMM of shape (m, k) x (k, n) at its size, TFLOP/s.

        Parameters
        ----------
        scheme, engine : str or None
            An exact-GEMM engine of a scheme, or ``None`` for native FP64 GEMM.
        m, n, k : int
            Dimensions; the size is s = (mnk)^(1/3) and the rate ``r s / (s + n0)``.
        fp32 : bool
            The engine's FP32 path (``fp32_tflops``) instead of its own rate.
        """
        if scheme is None:
            r, n0 = self.fp64_tflops, self.fp64_n0
        elif fp32:
            r, n0 = self.fp32_tflops[engine], self.fp32_n0.get(engine, 0.0)
        else:
            r, n0 = self.lowp_tflops[scheme][engine], self.lowp_n0.get(scheme, {}).get(engine, 0.0)
        s = (float(m) * n * k) ** (1.0 / 3.0)
        return r * s / (s + n0) if s > 0 else r

    def native_gemm_s(self, m: int, n: int, k: int) -> float:
        """Predicted time of a native FP64 GEMM (numpy) of shape (m, k) x (k, n), seconds."""
        return 2.0 * m * n * k / (self.gemm_tflops(None, None, m, n, k) * 1e12)

    def best_engine(self, scheme: str) -> tuple[str, float]:
        """Return the fastest engine of a scheme and its rate in TFLOP/s.

        Engines are compared by :meth:`effective_tflops`; the rate returned is the
        engine's own (``lowp_tflops``).

        Parameters
        ----------
        scheme : str
            A scheme measured in the profile.

        Returns
        -------
        tuple of (str, float)
            Engine name and rate.
        """
        engines = self.lowp_tflops.get(scheme)
        if not engines:
            raise TMEError(f"profile {self.path or self.name}: no engine rate for scheme {scheme!r}")
        return max(engines.items(), key=lambda kv: self.effective_tflops(scheme, kv[0]))

    def device(self) -> Device:
        """Return the profile as a :class:`~tme_model.specs.Device`.

        Returns
        -------
        Device
            FP64 vector and matrix from the measured rates, INT8 and FP8 from each
            scheme's fastest engine (its :meth:`effective_tflops`), bandwidth from
            STREAM, and the phase costs.
        """
        src = f"calibration profile {self.path}" if self.path else "calibration profile"
        figs = {
            "fp64_matrix": Figure(self.fp64_tflops, "profile", src, dense=True, note="native FP64 GEMM"),
            "fp64_vector": Figure(self.fp64_vector_tflops, "profile", src, dense=True),
            "mem_bw": Figure(self.mem_tbps, "profile", src, note="STREAM triad"),
        }
        for scheme in SCHEMES:
            if self.lowp_tflops.get(scheme):
                engine, _ = self.best_engine(scheme)
                note = f"ozaki {scheme} scheme, engine {engine!r}"
                own = gemms_per_modulus(scheme)
                if self.gemms_per(scheme, engine) != own:
                    note += (f" ({self.gemms_per(scheme, engine)} GEMM(s) per modulus instead of "
                             f"{own}: rate scaled to the scheme's GEMMs)")
                figs[scheme] = Figure(self.effective_tflops(scheme, engine), "profile", src,
                                      dense=True, note=note)
        desc = self.meta.get("description") or "this machine (calibrated)"
        return Device(self.name, str(desc), "", figs, origin=self.path or "profile",
                      phases=dict(self.phases))

    def predict_gemm(self, scheme: str, moduli: int, mode: str, m: int, n: int, k: int,
                     engine: str | None = None,
                     refined_block: tuple[int, int] = (0, 0),
                     refined_gemms: int = 1) -> GemmTime:
        """Predict the time of ``ozaki.dgemm`` on an (m x k) by (k x n) product.

        Parameters
        ----------
        scheme : str
            Scheme measured in the profile (``int8``, ``fp8``, or ``fp64``).
        moduli : int
            Number of moduli N.
        mode : {"fast", "accurate"}
            Scaling mode; accurate adds one exact bound GEMM.
        m, n, k : int
            Dimensions.
        engine : str, optional
            Engine; the fastest measured one by default.
        refined_block : (int, int), optional
            Rows and columns of the block the accurate-mode certificate refined
            (``info.refined_block``, data-dependent): ``refined_gemms`` native FP64
            GEMMs of that block are added to gemm.
        refined_gemms : int, optional
            The refinement's FP64 GEMMs (``info.gemms`` less the products and the
            bound GEMM): 1, its lower bound, where the block's lines hold no zero (the
            upper bound then follows from line sums); up to 2 more, on the lines that
            do, each counted here at the block's size (an upper estimate).

        Returns
        -------
        GemmTime
            scale = (s + s_acc) (mk + kn) (s_acc in accurate mode only),
            residue = r N (mk + kn), gemm = alpha 2mnk / rate(size), recon = c N mn,
            fixed = f, with alpha = g N (+ 1 in accurate mode), g the engine's GEMMs per
            modulus (:meth:`gemms_per`; for int8 and fp8 at the scheme's own count this is
            :func:`~tme_model.schemes.alpha_for`) and rate(size) from :meth:`gemm_tflops`.
            When the profile has a rate for the engine's FP32 path (``fp32_tflops``),
            gemm is instead the sum over the GEMMs ``ozaki`` runs
            (:func:`ozaki.exact_gemms`, alpha of them) of their exact blocks,
            each at the rate of its path.
        """
        if mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
        if isinstance(moduli, bool) or int(moduli) != moduli or moduli < 1:
            raise ValueError(f"moduli must be a positive integer, got {moduli!r}")
        if engine is None:
            engine = self.best_engine(scheme)[0]
        elif engine not in self.lowp_tflops.get(scheme, {}):
            raise TMEError(f"profile {self.path or self.name}: no rate for engine {engine!r} "
                           f"of scheme {scheme!r}")
        alpha = self.gemms_per(scheme, engine) * int(moduli) + (1 if mode == "accurate" else 0)
        if engine in self.fp32_tflops:
            gemm_s = self._path_gemm_s(scheme, int(moduli), mode, m, n, k, engine)
        else:
            gemm_s = alpha * 2.0 * m * n * k / (self.gemm_tflops(scheme, engine, m, n, k) * 1e12)
        rows, cols = refined_block
        if any(isinstance(x, bool) or int(x) != x or x < 0 for x in (rows, cols)):
            raise ValueError(f"refined_block must be two integers >= 0, got {refined_block!r}")
        if isinstance(refined_gemms, bool) or int(refined_gemms) != refined_gemms \
                or not 0 <= refined_gemms <= 3:
            raise ValueError(f"refined_gemms must be an integer in [0, 3], got {refined_gemms!r}")
        if rows and cols:
            gemm_s += int(refined_gemms) * self.native_gemm_s(rows, cols, k)
        ph = self.phases.get(scheme, PhaseCosts())
        n_in, n_out = m * k + k * n, m * n
        scale = ph.scale_s_per_element + (ph.accurate_scale_s_per_element if mode == "accurate" else 0.0)
        return GemmTime(
            scale_s=scale * n_in,
            residue_s=ph.residue_s_per_element_modulus * moduli * n_in,
            gemm_s=gemm_s,
            recon_s=ph.recon_s_per_output_modulus * moduli * n_out,
            fixed_s=ph.fixed_s,
        )

    def _path_gemm_s(self, scheme, moduli, mode, m, n, k, engine) -> float:
        rates = {f: self.gemm_tflops(scheme, engine, m, n, k, fp32=f) * 1e12 for f in (False, True)}
        return sum(2.0 * m * n * length / rates[f]
                   for length, f in gemm_paths(scheme, moduli, mode, k, engine))


def gemm_paths(scheme: str, moduli: int, mode: str, k: int, engine: str) -> list[tuple[int, bool]]:
    """The exact GEMM blocks of an ``ozaki.dgemm`` call: ``(k_block, fp32)`` each.

    Parameters
    ----------
    scheme, mode : str
        As ``ozaki.dgemm`` takes them.
    moduli : int
        The count the call used (``info.num_moduli``).
    k : int
        Inner dimension.
    engine : str
        An ``ozaki`` engine.

    Returns
    -------
    list of (int, bool)
        Per exact block: its inner length and whether it runs on the engine's FP32 path,
        from :func:`ozaki.exact_gemms`, :meth:`ozaki.Engine.blocks` and
        :meth:`~ozaki.Engine.fp32`.
    """
    from ozaki import available_engines, exact_gemms, get_engine

    engines = available_engines()
    if engine not in engines:
        raise TMEError(f"engine {engine!r} is not an ozaki engine; known: {', '.join(engines)}")
    eng = get_engine(engine)
    return [(length, eng.fp32(bound))
            for kc, amax, bmax in exact_gemms(k, scheme=scheme, num_moduli=moduli, mode=mode,
                                              engine=eng)
            for length, bound in eng.blocks(kc, amax, bmax)]
