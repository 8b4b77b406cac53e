"""The device projection of an HPL run: blocked right-looking LU, native FP64 against
emulated trailing updates, on a GPU of the database, in the TME model.

The algorithm is :func:`ozaki.linalg.lu_factor`'s (LAPACK's ``getrf`` order). For each
panel of ``w = min(nb, n - k)`` columns at ``k``, with ``m = n - k`` rows left and
``r = m - w`` trailing rows and columns:

* **panel**: unblocked LU of the ``m x w`` panel with partial pivoting, level-2 work on
  the FP64 vector units: ``W = sum_{j<w} (m-1-j) (2 (w-1-j) + 1)`` flops (one division
  and one rank-1 update per column), time ``max(W / P64_vector, Q / Bmem)`` with ``Q``
  the panel's traffic: ``"streamed"`` (each column step reads and writes the trailing
  part of the panel, ``16 sum_{j<w} (m-j)(w-j)`` bytes: the panel does not stay in
  cache) or ``"cached"`` (read and written once, ``16 m w`` bytes);
* **row interchanges** outside the panel: ``w`` swaps of rows of ``n - w`` entries,
  ``32 w (n - w)`` bytes at the memory bandwidth;
* **triangular solve** ``U12 <- L11^-1 A12``: ``r w (w-1)`` flops at the FP64 peak of
  a GEMM-like kernel (``max(vector, matrix)``; DTRSM runs on the matrix units where
  they exist) or its traffic ``8 (w^2 / 2 + 2 w r)`` bytes, whichever is slower; native
  in both runs, as in ``ozaki.linalg``;
* **trailing update** ``A22 <- A22 - L21 U12``: a GEMM kernel of the TME model with
  ``W = 2 r^2 w``, ``Q = 8 (2 r w + 2 r^2)`` (``A22`` read and written), ``n_out = r^2``,
  ``k = w``: :func:`tme_model.model.predict` gives its native time (FP64 matrix units)
  and its emulated time (the scenario's substrate, moduli, alpha, beta and gamma for
  inner dimension ``w``).

HPL's time also counts the **solve**, two triangular solves with one right-hand side:
``2 n^2`` flops on the vector units against ``8 n^2`` bytes (the factors read once).
Only the trailing updates differ between the native and the emulated runs. Rates are
HPL's: ``(2/3 n^3 + 3/2 n^2) / time``. Modelled figures, not measured; no overlap of
the panel with the updates (a look-ahead would hide part of the panel's time).

``python -m tme_model.lu_projection --gpu b300 --gpu h100`` prints the table of
:doc:`hpl`, "On a GPU".
"""

from __future__ import annotations

import argparse
import json
import math
import numbers
from dataclasses import asdict, dataclass
from typing import Sequence

from .model import predict
from .scenario import Scenario
from .specs import Device, TMEError, get_device, load_devices
from .workloads import Kernel

__all__ = ["HPL_MEMORY_FILL", "LUProjection", "PANEL_MODELS", "hpl_flops", "hpl_size",
           "lu_projection_rows", "lu_projection_rst", "main", "project_lu"]

#: How the panel's traffic is counted (module docstring).
PANEL_MODELS: tuple[str, ...] = ("streamed", "cached")
#: Share of the device memory an HPL run fills with its matrix (HPL's rule of thumb).
HPL_MEMORY_FILL = 0.8
_TERA = 1e12
_WORD = 8


def hpl_flops(n: int) -> float:
    """HPL's operation count of a solve of order ``n``: ``2/3 n^3 + 3/2 n^2`` flops."""
    return 2.0 * n ** 3 / 3.0 + 1.5 * n ** 2


@dataclass(frozen=True)
class LUProjection:
    """A GPU's modelled time for an LU solve of order ``n``, native FP64 against emulated.

    Attributes
    ----------
    gpu : str
        Device key.
    n, nb : int
        Order of the matrix and panel width.
    scheme : str
        The emulation's substrate (for the full panels' inner dimension ``nb``).
    moduli : int or None
        Its number of moduli.
    alpha : float
        Its compute multiplier.
    gamma_source : str
        How the reconstruction cost was set (``"given"``, ``"estimate"``, ``"profile"``).
    panel : str
        The panel's traffic model, one of :data:`PANEL_MODELS`.
    panel_s, swap_s, triangular_s, solve_s : float
        Seconds in the panels, the row interchanges, the triangular solves of the
        factorisation and the final solve: the same in both runs.
    gemm_native_s, gemm_emulated_s : float
        Seconds in the trailing updates, native FP64 and emulated.
    panel_bound : str
        ``"compute"`` or ``"memory"``: what limits the largest panel.
    fits_memory : bool or None
        Whether the ``8 n^2`` bytes of the matrix fit the device memory (``None``: size
        unknown); the emulation's workspace is not counted.
    """

    gpu: str
    n: int
    nb: int
    scheme: str
    moduli: int | None
    alpha: float
    gamma_source: str
    panel: str
    panel_s: float
    swap_s: float
    triangular_s: float
    solve_s: float
    gemm_native_s: float
    gemm_emulated_s: float
    panel_bound: str
    fits_memory: bool | None

    @property
    def shared_s(self) -> float:
        """Seconds outside the trailing updates (panels, swaps, triangular solves, solve)."""
        return self.panel_s + self.swap_s + self.triangular_s + self.solve_s

    @property
    def native_s(self) -> float:
        """Seconds of the native FP64 run."""
        return self.shared_s + self.gemm_native_s

    @property
    def emulated_s(self) -> float:
        """Seconds of the run with emulated trailing updates."""
        return self.shared_s + self.gemm_emulated_s

    @property
    def gemm_share(self) -> float:
        """Share of the emulated run's time in the trailing updates."""
        return self.gemm_emulated_s / self.emulated_s

    @property
    def native_gemm_share(self) -> float:
        """Share of the native run's time in the trailing updates."""
        return self.gemm_native_s / self.native_s

    @property
    def native_tflops(self) -> float:
        """HPL rate of the native run, TFLOP/s."""
        return hpl_flops(self.n) / self.native_s / _TERA

    @property
    def emulated_tflops(self) -> float:
        """HPL rate of the emulated run, TFLOP/s."""
        return hpl_flops(self.n) / self.emulated_s / _TERA

    @property
    def speedup(self) -> float:
        """``native_s / emulated_s``: what the emulation gains (> 1) or loses."""
        return self.native_s / self.emulated_s

    def to_dict(self) -> dict:
        """Every field and derived figure, JSON-ready."""
        d = asdict(self)
        for name in ("shared_s", "native_s", "emulated_s", "gemm_share", "native_gemm_share",
                     "native_tflops", "emulated_tflops", "speedup"):
            d[name] = getattr(self, name)
        return d


def _positive_int(value, name: str) -> int:
    """``value`` as a positive int, or a ``TypeError``/``ValueError`` naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be a positive int, got {type(value).__name__} {value!r}")
    if value < 1:
        raise ValueError(f"{name} must be a positive int, got {int(value)}")
    return int(value)


def _panel_work(m: int, w: int) -> tuple[float, float, float]:
    """``(flops, streamed bytes, cached bytes)`` of the unblocked LU of an ``m x w`` panel.

    Closed forms of the sums of the module docstring (``S1 = sum j``, ``S2 = sum j^2``
    over ``j < w``): ``sum (a - j)(c - 2j) = a c w - (2a + c) S1 + 2 S2`` with
    ``a = m - 1``, ``c = 2w - 1``; ``sum (m - j)(w - j) = m w^2 - (m + w) S1 + S2``.
    """
    s1, s2 = w * (w - 1) // 2, (w - 1) * w * (2 * w - 1) // 6
    a, c = m - 1, 2 * w - 1
    flops = a * c * w - (2 * a + c) * s1 + 2 * s2
    streamed = 2 * _WORD * (m * w * w - (m + w) * s1 + s2)
    return float(flops), float(streamed), float(2 * _WORD * m * w)


def project_lu(n: int, device: Device, nb: int = 256, scenario: Scenario | None = None,
               panel: str = "streamed") -> LUProjection:
    """Model an HPL solve of order ``n`` on a device: native FP64 LU against emulated updates.

    Parameters
    ----------
    n : int
        Order of the matrix, >= 1.
    device : Device
        A database device (needs FP64, bandwidth and a low-precision figure).
    nb : int, optional
        Panel width (default 256).
    scenario : Scenario, optional
        The emulation's parameters (default ``Scenario()``: the best substrate at FP64
        grade for inner dimension ``nb``, accurate mode as ``ozaki.linalg``, gamma
        estimated: an unfused reconstruction on the FP64 units); ``gamma=0.0`` for the
        fused ideal.
    panel : {"streamed", "cached"}
        The panel's traffic model (module docstring).

    Returns
    -------
    LUProjection
        Seconds per part, GEMM share, HPL rates and the speedup.

    Raises
    ------
    ValueError
        ``n`` or ``nb`` below 1, an unknown ``panel``.
    TypeError
        ``n`` or ``nb`` not an int, ``device`` not a :class:`~tme_model.specs.Device`,
        ``scenario`` not a :class:`~tme_model.scenario.Scenario`.
    tme_model.specs.MissingFigureError
        A figure the model needs is not known for the device.
    """
    n, nb = _positive_int(n, "n"), _positive_int(nb, "nb")
    if not isinstance(device, Device):
        raise TypeError(f"device must be a tme_model Device, got {type(device).__name__}")
    sc = Scenario() if scenario is None else scenario
    if not isinstance(sc, Scenario):
        raise TypeError(f"scenario must be a tme_model Scenario, got {type(sc).__name__}")
    if panel not in PANEL_MODELS:
        raise ValueError(f"panel must be one of {', '.join(PANEL_MODELS)}, got {panel!r}")
    vec, mat, bw = (device.p64(False) * _TERA, device.p64(True) * _TERA,
                    device.bandwidth() * _TERA)
    emulations: dict[int, object] = {}
    panel_s = swap_s = tri_s = gemm_n = gemm_e = 0.0
    first_bound = None
    for k in range(0, n, nb):
        w = min(nb, n - k)
        m, r = n - k, n - k - w
        flops, streamed, cached = _panel_work(m, w)
        t_flops, t_bytes = flops / vec, (streamed if panel == "streamed" else cached) / bw
        panel_s += max(t_flops, t_bytes)
        if first_bound is None:
            first_bound = "compute" if t_flops >= t_bytes else "memory"
        swap_s += 4 * _WORD * w * (n - w) / bw
        if r == 0:
            continue
        tri_s += max(r * w * (w - 1) / mat, _WORD * (w * w / 2 + 2 * w * r) / bw)
        kern = Kernel(f"lu-update:{r}x{w}", 2.0 * r * r * w, _WORD * (2.0 * r * w + 2.0 * r * r),
                      float(r * r), w, matrix=True, n_in=2.0 * r * w)
        if w not in emulations:
            emulations[w] = sc.emulation(device, kern)
        pred = predict(kern, device, emulations[w])
        gemm_n += pred.native_s
        gemm_e += pred.emulated_s
    solve_s = max(2.0 * n * n / vec, _WORD * n * n / bw)
    if not emulations:  # n <= nb: one panel, no update; the substrate it would use
        w = min(nb, n)
        emulations[w] = sc.emulation(device, Kernel("lu-update", 2.0 * w ** 3, 32.0 * w * w,
                                                    float(w * w), w, matrix=True))
    emu = emulations.get(nb, next(iter(emulations.values())))
    size = device.get("mem_size")
    return LUProjection(
        device.key, n, nb, emu.scheme, emu.moduli, emu.alpha, emu.gamma_source, panel,
        panel_s, swap_s, tri_s, solve_s, gemm_n, gemm_e, first_bound,
        None if size is None else _WORD * n * n <= size * 1e9)


def hpl_size(device: Device, nb: int = 256, fill: float = HPL_MEMORY_FILL) -> int:
    """The order of an HPL run filling ``fill`` of the device memory, a multiple of ``nb``.

    Parameters
    ----------
    device : Device
        Needs ``mem_size`` (GB).
    nb : int, optional
        Panel width.
    fill : float, optional
        Share of the memory the ``8 n^2`` bytes of the matrix take, in (0, 1].

    Returns
    -------
    int
        ``nb * floor(sqrt(fill * mem_size / 8) / nb)`` (at least ``nb``).
    """
    nb = _positive_int(nb, "nb")
    if not (isinstance(fill, (int, float)) and 0.0 < fill <= 1.0):
        raise ValueError(f"fill must be in (0, 1], got {fill!r}")
    mem = device.require("mem_size") * 1e9
    return max(nb, nb * int(math.sqrt(fill * mem / _WORD) // nb))


#: Devices, orders and gamma settings of the table on :doc:`hpl`.
TABLE_GPUS: tuple[str, ...] = ("b300", "h100")
TABLE_SIZES: tuple[int, ...] = (16384, 65536)


def lu_projection_rows(gpus: Sequence[str] = TABLE_GPUS, sizes: Sequence[int] = TABLE_SIZES,
                       nb: int = 256, panel: str = "streamed", hpl: bool = True,
                       devices: dict | None = None) -> list[dict]:
    """Projections for each device, order and gamma (0: fused; estimated: unfused).

    With ``hpl`` each device also gets the order of an HPL run filling
    :data:`HPL_MEMORY_FILL` of its memory (:func:`hpl_size`). Rows are
    :meth:`LUProjection.to_dict` plus ``gamma`` (``"0"`` or ``"est."``) and ``hpl``.
    """
    devices = load_devices() if devices is None else devices
    rows = []
    for key in gpus:
        dev = get_device(key, devices)
        orders = [(s, False) for s in sizes] + ([(hpl_size(dev, nb), True)] if hpl else [])
        for n, is_hpl in orders:
            for label, gamma in (("0", 0.0), ("est.", None)):
                p = project_lu(n, dev, nb, Scenario(gamma=gamma), panel)
                rows.append({**p.to_dict(), "gamma": label, "hpl": is_hpl})
    return rows


def lu_projection_rst(rows: Sequence[dict] | None = None) -> str:
    """The rows of :func:`lu_projection_rows` as a reStructuredText table."""
    from .tables import rst_table

    rows = lu_projection_rows() if rows is None else rows
    head = ["device", "n", "substrate", "gamma", "native [s]", "native TF/s", "panel [s]",
            "trsm [s]", "updates, emul. [s]", "emulated [s]", "emul. TF/s", "GEMM share",
            "gain"]
    body = [[r["gpu"], f"{r['n']}" + (" (HPL)" if r["hpl"] else ""),
             f"{r['scheme']} N={r['moduli']}", r["gamma"], f"{r['native_s']:.3g}",
             f"{r['native_tflops']:.3g}", f"{r['panel_s']:.3g}", f"{r['triangular_s']:.3g}",
             f"{r['gemm_emulated_s']:.3g}", f"{r['emulated_s']:.3g}",
             f"{r['emulated_tflops']:.3g}", f"{100 * r['gemm_share']:.0f}%",
             f"{r['speedup']:.2g}x"] for r in rows]
    return rst_table(head, body)


def _ints(text: str) -> list[int]:
    try:
        vals = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"need comma-separated integers, got {text!r}") from None
    if not vals or min(vals) < 1:
        raise argparse.ArgumentTypeError(f"need positive integers, got {text!r}")
    return vals


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m tme_model.lu_projection``: the projection table (reStructuredText or JSON).

    Parameters
    ----------
    argv : sequence of str, optional
        Arguments (default ``sys.argv[1:]``).

    Returns
    -------
    int
        Exit status (0; usage errors exit with 2).
    """
    p = argparse.ArgumentParser(prog="python -m tme_model.lu_projection",
                                description=__doc__.split("\n\n")[0])
    p.add_argument("--gpu", action="append", metavar="KEY",
                   help=f"device key (repeatable; default {' '.join(TABLE_GPUS)})")
    p.add_argument("--n", type=_ints, default=list(TABLE_SIZES), metavar="N,N",
                   help=f"orders (default {','.join(map(str, TABLE_SIZES))})")
    p.add_argument("--nb", type=int, default=256, help="panel width (default 256)")
    p.add_argument("--panel", choices=PANEL_MODELS, default="streamed",
                   help="the panel's traffic model (default streamed)")
    p.add_argument("--no-hpl", action="store_true",
                   help="no row at the memory-filling HPL order")
    p.add_argument("--format", choices=("rst", "json"), default="rst")
    a = p.parse_args(argv)
    if a.nb < 1:
        p.error(f"--nb must be a positive int, got {a.nb}")
    try:
        rows = lu_projection_rows(a.gpu or TABLE_GPUS, a.n, a.nb, a.panel, not a.no_hpl)
    except TMEError as exc:
        p.error(str(exc))
    print(json.dumps(rows, indent=2) if a.format == "json" else
          "MODELLED (not measured): HPL's LU on one GPU, TME model\n\n"
          + lu_projection_rst(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
