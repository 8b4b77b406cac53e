"""Roofline charts of the TME model (matplotlib, Agg backend, imported on use).

One panel per device, log-log: x "Arithmetic intensity [FLOP/byte]", y "Performance
[TFLOP/s]".  Drawn: the native FP64 roof (vector and matrix where they differ), the
low-precision roof, the emulated FP64 ceiling min(Plow/alpha, I Bmem/beta), the memory
roof and its beta-scaled twin, both ridge points and the crossover intensity, and each
kernel as a (native, emulated) marker pair labelled with its speedup.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

import numpy as np

from .model import Prediction, roof_emulated, roof_native
from .specs import Device

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

__all__ = ["roofline_figure", "save_figure"]


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


#: Label offsets tried in turn (points, horizontal alignment): right of the point, then
#: below, left, and further out.
_RIGHT = [(4, 2, "left"), (4, -11, "left"), (-4, 2, "right"), (-4, -11, "right"),
          (4, 13, "left"), (4, -22, "left"), (-4, 13, "right"), (-4, -22, "right"),
          (4, -33, "left"), (-4, -33, "right")]


def _place_labels(ax, labels) -> None:
    """Annotate ``ax`` with ``labels`` [(text, xy, offsets, kwargs)], each at the first
    offset whose box overlaps no label placed before and stays inside the axes (else
    at its first offset). Call after the layout is final: offsets are in points."""
    renderer = ax.figure.canvas.get_renderer()
    frame = ax.get_window_extent(renderer)
    placed = []
    for text, xy, offsets, kw in labels:
        best = None
        for dx, dy, ha in offsets:
            ann = ax.annotate(text, xy, xytext=(dx, dy), textcoords="offset points", ha=ha, **kw)
            box = ann.get_window_extent(renderer).expanded(1.04, 1.1)
            inside = (frame.x0 <= box.x0 and box.x1 <= frame.x1
                      and frame.y0 <= box.y0 and box.y1 <= frame.y1)
            if inside and not any(box.overlaps(b) for b in placed):
                best = (ann, box)
                break
            ann.remove()
        if best is None:
            dx, dy, ha = offsets[0]
            ann = ax.annotate(text, xy, xytext=(dx, dy), textcoords="offset points", ha=ha, **kw)
            best = (ann, ann.get_window_extent(renderer))
        placed.append(best[1])


def _panel(ax, device: Device, preds: Sequence[Prediction]) -> list:
    """Draw one device's roofline on ``ax``; return its labels for :func:`_place_labels`."""
    labels = []
    bw = device.bandwidth()
    intens = [p.intensity for p in preds]
    p64s = sorted({p.p64_tflops for p in preds}, reverse=True)
    emus = sorted({(p.scheme, p.alpha, p.beta, p.plow_tflops) for p in preds})
    ridges = [p64 / bw for p64 in p64s] + [b * pl / (a * bw) for _, a, b, pl in emus]
    lo = min(intens + ridges + [0.05]) / 4
    hi = max(intens + ridges + [500.0]) * 4
    x = np.geomspace(lo, hi, 400)
    top = max([pl for *_, pl in emus] + p64s) * 3
    bottom = min([lo * bw / max(b for _, _, b, _ in emus)]
                 + [p.native_tflops for p in preds] + [p.emulated_tflops for p in preds]) / 3

    ax.loglog(x, x * bw, color="black", lw=0.8, label=f"memory roof ({bw:g} TB/s)")
    for beta in sorted({e[2] for e in emus}):
        same = " = memory roof" if beta == 1 else ""
        ax.loglog(x, x * bw / beta, color="grey", lw=1.0, ls="--",
                  label=f"memory roof / beta (beta={beta:g}{same})")
    for scheme, plow in sorted({(e[0], e[3]) for e in emus}):
        ax.loglog(x, roof_native(x, plow, bw), color="tab:green", lw=1.2, ls=":",
                  label=f"{scheme.upper()} roof ({plow:g} TFLOP/s)")
    for i, (scheme, alpha, beta, plow) in enumerate(emus):
        ax.loglog(x, roof_emulated(x, plow, bw, alpha, beta), color="tab:red", lw=2 - 0.6 * i,
                  label=f"emulated FP64 ceiling ({scheme}, alpha={alpha:g})")
        ridge = beta * plow / (alpha * bw)
        ax.plot([ridge], [plow / alpha], "s", color="tab:red", ms=5)
        labels.append((f"emulated ridge I={ridge:.3g} (alpha={alpha:g})", (ridge, plow / alpha),
                       [(-30, 8, "left"), (-30, 19, "left"), (-30, 30, "left"), (6, -14, "left")],
                       dict(fontsize=7, color="tab:red")))
    for p64 in p64s:
        which = ""
        if len(p64s) > 1:
            which = " (matrix)" if p64 == p64s[0] else " (vector)"
        ax.loglog(x, roof_native(x, p64, bw), color="tab:blue", lw=2,
                  label=f"native FP64{which} ({p64:g} TFLOP/s)")
        ax.plot([p64 / bw], [p64], "s", color="tab:blue", ms=5)
        labels.append((f"native ridge I={p64 / bw:.3g}", (p64 / bw, p64),
                       [(6, -12, "left"), (6, -24, "left"), (6, 6, "left"), (-6, 6, "right")],
                       dict(fontsize=7, color="tab:blue")))
        crossings = set()
        for scheme, alpha, beta, plow in emus:
            if plow / alpha > p64:
                xo = beta * p64 / bw
                if xo in crossings:  # the same for every alpha that wins
                    continue
                crossings.add(xo)
                ax.axvline(xo, color="tab:purple", lw=0.8, ls="-.")
                labels.append((f"crossover I={xo:.3g}", (xo, np.sqrt(bottom * p64)),
                               [(-3, 0, "right"), (3, 0, "left"), (-3, -40, "right"), (3, -40, "left")],
                               dict(fontsize=7, color="tab:purple", rotation=90, va="center")))
            else:
                ax.text(0.02, 0.02, f"{scheme}, alpha={alpha:g}: emulation never wins "
                        f"(Plow/alpha = {plow / alpha:.3g} <= P64 = {p64:g})",
                        transform=ax.transAxes, fontsize=7, color="tab:purple")

    for p in sorted(preds, key=lambda p: p.intensity):
        ax.plot([p.intensity] * 2, [p.native_tflops, p.emulated_tflops], color="0.6", lw=0.8)
        ax.plot(p.intensity, p.native_tflops, "o", mfc="white", mec="tab:blue", ms=6)
        ax.plot(p.intensity, p.emulated_tflops, "^", color="tab:red", ms=6)
        labels.append((f"{p.kernel} x{p.speedup:.3g}", (p.intensity, p.emulated_tflops), _RIGHT,
                       dict(fontsize=7)))
    ax.plot([], [], "o", mfc="white", mec="tab:blue", ls="none", label="kernel, native")
    ax.plot([], [], "^", color="tab:red", ls="none", label="kernel, emulated (x speedup)")

    ax.set_xlim(lo, hi)
    ax.set_ylim(bottom, top)
    ax.set_xlabel("Arithmetic intensity [FLOP/byte]")
    ax.set_ylabel("Performance [TFLOP/s]")
    ax.set_title(f"{device.name} [{device.key}]\n{_params(preds)}", fontsize=9)
    ax.grid(True, which="major", lw=0.3)
    ax.legend(fontsize=6.5, loc="lower right")
    return labels


def _params(preds: Sequence[Prediction]) -> str:
    def joined(values, fmt="{}"):
        return "/".join(fmt.format(v) for v in dict.fromkeys(values))

    n = joined([p.moduli for p in preds if p.moduli is not None])
    mode = joined([p.mode for p in preds if p.mode])
    return (f"{joined(p.scheme for p in preds)}{' N=' + n if n else ''}{' ' + mode if mode else ''}, "
            f"alpha={joined((p.alpha for p in preds), '{:g}')}, "
            f"beta={joined((p.beta for p in preds), '{:g}')}, "
            f"gamma={joined((p.gamma for p in preds), '{:.2g}')} s/output")


def roofline_figure(panels: Sequence[tuple[Device, Sequence[Prediction]]],
                    suptitle: str = "") -> "Figure":
    """Draw one roofline panel per device.

    Parameters
    ----------
    panels : sequence of (Device, sequence of Prediction)
        Each device with its kernels' predictions (from :func:`tme_model.model.predict`).
    suptitle : str, optional
        Figure title (the scenario).

    Returns
    -------
    matplotlib.figure.Figure
        The figure, with exactly one axes per panel.
    """
    if not panels:
        raise ValueError("roofline_figure needs at least one device")
    plt = _pyplot()
    n = len(panels)
    fig, axes = plt.subplots(1, n, figsize=(7.5 * n, 6.2), squeeze=False)
    labels = [_panel(ax, device, preds) for ax, (device, preds) in zip(axes[0], panels)]
    if suptitle:
        fig.suptitle(f"TME model - {suptitle}", fontsize=10)
    fig.tight_layout()
    for ax, lab in zip(axes[0], labels):
        _place_labels(ax, lab)
    return fig


def save_figure(fig: "Figure", path: str, dpi: int = 110) -> None:
    """Write a figure (format from the extension: png, svg, pdf) and close it.

    Parameters
    ----------
    fig : matplotlib.figure.Figure
        The figure.
    path : str
        Destination file.
    dpi : int, optional
        Resolution for raster formats.
    """
    plt = _pyplot()
    try:
        fig.savefig(path, dpi=dpi)
    finally:
        plt.close(fig)
