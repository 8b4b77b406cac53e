"""Roofline charts of the TME model (matplotlib, Agg backend, imported on use: the
``[plot]`` extra, see :mod:`tme_model.extras`).

One panel per device, log-log: x "Arithmetic intensity [FLOP/byte]", y "Performance
[TFLOP/s]".  Drawn: the native FP64 roof (vector and matrix where they differ), the
low-precision roof, the emulated FP64 ceiling min(Plow/alpha, I Bmem/beta), the memory
roof and its beta-scaled twin, both ridge points and the crossover intensity, and each
kernel as a (native, emulated) marker pair labelled with its speedup.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

import numpy as np

from .extras import require
from .model import Prediction, roof_emulated, roof_native
from .specs import Device

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

__all__ = ["roofline_figure", "save_figure"]


def _pyplot():
    require("matplotlib").use("Agg")
    return require("matplotlib.pyplot")


#: Label offsets tried in turn (points, horizontal alignment): right of the point, then
#: below, left, and further out.
_RIGHT = [(dx, dy, ha) for up, down in ((2, -11), (13, -22), (24, -33), (35, -44))
          for dx, ha in ((4, "left"), (-4, "right")) for dy in (up, down)]


def _line_points(ax, step: float = 3.0) -> np.ndarray:
    """Display coordinates of the data lines of ``ax``, at most ``step`` pixels apart."""
    pts = [np.empty((0, 2))]
    for line in ax.get_lines():
        if line.get_transform() != ax.transData or len(line.get_xdata()) < 2:
            continue  # axvline (drawn in axes coordinates), legend proxies
        xy = ax.transData.transform(np.column_stack([line.get_xdata(), line.get_ydata()]))
        xy = xy[np.all(np.isfinite(xy), axis=1)]
        for p, q in zip(xy[:-1], xy[1:]):
            n = max(2, int(np.hypot(*(q - p)) / step) + 1)
            pts.append(p + np.linspace(0.0, 1.0, n)[:, None] * (q - p))
    return np.concatenate(pts)


def _place_labels(ax, labels, points) -> None:
    """Annotate ``ax`` with ``labels`` [(text, xy, offsets, kwargs)].

    Each label takes the first of its offsets whose box stays inside the axes and
    meets no label placed before, the legend, a marker at ``points`` [(x, y)] or a
    drawn line; when none is free, the one with the fewest collisions (boxes before
    lines). Call after the layout is final: offsets are in points.
    """
    from matplotlib.transforms import Bbox

    renderer = ax.figure.canvas.get_renderer()
    frame = ax.get_window_extent(renderer)
    r = 4 * ax.figure.dpi / 72  # a marker's half-width, pixels
    boxes = [Bbox.from_extents(u - r, v - r, u + r, v + r)
             for u, v in ax.transData.transform(np.asarray(points, dtype=float).reshape(-1, 2))]
    if ax.get_legend() is not None:
        boxes.append(ax.get_legend().get_window_extent(renderer))
    lines = _line_points(ax)

    def cost(box) -> float:
        outside = not (frame.x0 <= box.x0 and box.x1 <= frame.x1
                       and frame.y0 <= box.y0 and box.y1 <= frame.y1)
        hits = sum(box.overlaps(b) for b in boxes)
        crossed = np.count_nonzero((lines[:, 0] >= box.x0) & (lines[:, 0] <= box.x1)
                                   & (lines[:, 1] >= box.y0) & (lines[:, 1] <= box.y1))
        return 1e6 * outside + 1e3 * hits + crossed

    for text, xy, offsets, kw in labels:
        best = None
        for dx, dy, ha in offsets:
            ann = ax.annotate(text, xy, xytext=(dx, dy), textcoords="offset points", ha=ha, **kw)
            box = ann.get_window_extent(renderer).expanded(1.04, 1.1)
            c = cost(box)
            if best is None or c < best[0]:
                if best is not None:
                    best[1].remove()
                best = (c, ann, box)
            else:
                ann.remove()
            if c == 0:
                break
        boxes.append(best[2])


def _panel(ax, device: Device, preds: Sequence[Prediction]) -> tuple[list, list]:
    """Draw one device's roofline on ``ax``; return its labels and marker points for
    :func:`_place_labels`."""
    labels, points, never = [], [], []
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
        points.append((ridge, plow / alpha))
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
        points.append((p64 / bw, p64))
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
                # with gamma > 0 each kernel's own crossover is later (tme-table)
                at = " at gamma=0" if any(p.gamma > 0 for p in preds) else ""
                labels.append((f"crossover I={xo:.3g}{which}{at}", (xo, 0.3),  # y: axes fraction
                               [(-3, 0, "right"), (3, 0, "left"), (-3, 40, "right"), (3, 40, "left")],
                               dict(fontsize=7, color="tab:purple", rotation=90, va="center",
                                    xycoords=ax.get_xaxis_transform())))
            else:
                never.append(f"{scheme}, alpha={alpha:g}: emulation never wins against native"
                             f"{which}:\nPlow/alpha = {plow / alpha:.3g} <= P64 = {p64:g} TFLOP/s")
    if never:  # top left: above the memory roof, always empty
        ax.text(0.02, 0.98, "\n".join(never), transform=ax.transAxes, fontsize=7, va="top",
                color="tab:purple")

    for p in sorted(preds, key=lambda p: p.intensity):
        ax.plot([p.intensity] * 2, [p.native_tflops, p.emulated_tflops], color="0.6", lw=0.8)
        ax.plot(p.intensity, p.native_tflops, "o", mfc="white", mec="tab:blue", ms=6)
        ax.plot(p.intensity, p.emulated_tflops, "^", color="tab:red", ms=6)
        points += [(p.intensity, p.native_tflops), (p.intensity, p.emulated_tflops)]
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
    return labels, points


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
    for ax, (lab, points) in zip(axes[0], labels):
        _place_labels(ax, lab, points)
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
