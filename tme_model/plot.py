"""Roofline charts of the TME model (matplotlib, Agg backend, imported on use: the
``[plot]`` extra, see :mod:`tme_model.extras`).

One panel per device, log-log: x "Arithmetic intensity [FLOP/byte]", y "Performance
[TFLOP/s]".  Drawn: the native FP64 roof (vector and matrix where they differ), the
low-precision roof, the emulated FP64 ceiling min(Plow/alpha, I Bmem/beta) of each
configuration (moduli count) the kernels use, the memory roof and its beta-scaled twin,
the ridge points and the crossover intensity, and each kernel as a (native, emulated)
marker pair labelled with its speedup.  Below each panel: a legend in words (substrate,
moduli, mode and the kernels of each ceiling) and a caption: what the crossover line
means when reconstruction costs time (gamma > 0: it is the crossover of a free
reconstruction, and each kernel's own crossover is stated), and when emulation never wins.
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


def load_pyplot():
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


def _seconds(t: float) -> str:
    """A duration in a readable unit: ``90 ps``, ``1.5 ns``, ``2 us``."""
    for unit, scale in (("ps", 1e-12), ("ns", 1e-9), ("us", 1e-6), ("ms", 1e-3)):
        if t < 999.5 * scale:
            v = t / scale
            return f"{v:.0f} {unit}" if v >= 10 else f"{v:.2g} {unit}"
    return f"{t:.3g} s"


def _span(values, fmt="{:g}", sep="-") -> str:
    """``13-14`` for several values, ``14`` for one (in increasing order)."""
    vals = sorted(set(values))
    if len(vals) == 1:
        return fmt.format(vals[0])
    return fmt.format(vals[0]) + sep + fmt.format(vals[-1])


def _names(names) -> str:
    return ", ".join(dict.fromkeys(names))


def _substrate(scheme: str, moduli, mode) -> str:
    """``FP8, 14 moduli, accurate mode`` (what is known of the configuration)."""
    parts = [scheme.upper()]
    if moduli is not None:
        parts.append(f"{moduli} moduli")
    if mode:
        parts.append(f"{mode} mode")
    return ", ".join(parts)


def _groups(preds: Sequence[Prediction]) -> dict[tuple, list[Prediction]]:
    """The kernels by emulated configuration (scheme, alpha, beta, Plow): one ceiling each."""
    out: dict[tuple, list[Prediction]] = {}
    for p in preds:
        out.setdefault((p.scheme, p.alpha, p.beta, p.plow_tflops), []).append(p)
    return dict(sorted(out.items(), key=lambda kv: -kv[0][3] / kv[0][1]))  # highest ceiling first


def _crossovers(preds: Sequence[Prediction]) -> str:
    """Each kernel's own crossover (reconstruction included), kernels with the same one
    together: ``dgemm, gemv-b8 win right of I=0.157; spmv never win (...)``."""
    by: dict[str, list[str]] = {}
    for p in preds:
        c = p.crossover
        key = ("never" if c.kind == "never" else
               f"{'from' if c.kind == 'tie' else 'right of'} I={c.intensity:.3g}"
               + (" (a tie)" if c.kind == "tie" else ""))
        by.setdefault(key, []).append(p.kernel)
    parts = []
    for key, names in by.items():
        if key == "never":
            parts.append(f"{_names(names)} never win (their emulated compute and "
                         "reconstruction time per flop exceeds native FP64's)")
        else:
            parts.append(f"{_names(names)} win {key}")
    return "; ".join(parts)


def _panel(ax, device: Device, preds: Sequence[Prediction]) -> tuple[list, list, str]:
    """Draw one device's roofline on ``ax``; return its labels and marker points for
    :func:`_place_labels`, and the panel's caption (plain words, for below the panel)."""
    labels, points, notes, lines = [], [], [], []
    bw = device.bandwidth()
    intens = [p.intensity for p in preds]
    p64s = sorted({p.p64_tflops for p in preds}, reverse=True)
    groups = _groups(preds)
    emus = list(groups)
    ridges = [p64 / bw for p64 in p64s] + [b * pl / (a * bw) for _, a, b, pl in emus]
    lo = min(intens + ridges + [0.05]) / 4
    hi = max(intens + ridges + [500.0]) * 4
    x = np.geomspace(lo, hi, 400)
    top = max([pl for *_, pl in emus] + p64s) * 3
    bottom = min([lo * bw / max(b for _, _, b, _ in emus)]
                 + [p.native_tflops for p in preds] + [p.emulated_tflops for p in preds]) / 3
    overhead = any(p.overhead_s > 0 for p in preds)

    ax.loglog(x, x * bw, color="black", lw=0.8, label=f"memory roof: {bw:g} TB/s")
    for beta in sorted({e[2] for e in emus}):
        if beta != 1:  # beta = 1: the memory roof itself
            ax.loglog(x, x * bw / beta, color="grey", lw=1.0, ls="--",
                      label=f"emulation's memory roof: {bw:g} TB/s / beta (beta={beta:g})")
    for scheme, plow in sorted({(e[0], e[3]) for e in emus}):
        ax.loglog(x, roof_native(x, plow, bw), color="tab:green", lw=1.2, ls=":",
                  label=f"{scheme.upper()} matrix-engine peak: {plow:g} TFLOP/s")
    styles = [("tab:red", "-", 2.0), ("darkred", "--", 1.4), ("tab:orange", "-.", 1.4),
              ("tab:brown", ":", 1.4)]
    close = len(emus) > 1
    for i, ((scheme, alpha, beta, plow), members) in enumerate(groups.items()):
        colour, ls, lw = styles[i % len(styles)]
        ceiling = plow / alpha
        moduli = _span([p.moduli for p in members if p.moduli is not None]) if any(
            p.moduli is not None for p in members) else None
        mode = "/".join(dict.fromkeys(p.mode for p in members if p.mode)) or None
        what = _substrate(scheme, moduli, mode)
        label = f"emulated FP64 ceiling: {what}, alpha={alpha:g} ({ceiling:.3g} TFLOP/s)"
        if close:
            label += f"\n    for {_names(p.kernel for p in members)}"
        ax.loglog(x, roof_emulated(x, plow, bw, alpha, beta), color=colour, lw=lw, ls=ls,
                  label=label)
        ridge = beta * plow / (alpha * bw)
        ax.plot([ridge], [ceiling], "s", color=colour, ms=5)
        points.append((ridge, ceiling))
        # the ceilings of several moduli counts lie close together: the highest is
        # labelled above its line, the others below theirs
        above = [(dx, dy, "left") for dy in (4, 14) for dx in (24, 44, 64)]
        below = [(dx, dy, "left") for dy in (-12, -22) for dx in (24, 44, 64)]
        name = f"{moduli} moduli" if close and moduli is not None else f"alpha={alpha:g}"
        labels.append((f"emulated ceiling, {name}: ridge I={ridge:.3g}", (ridge, ceiling),
                       above + below if i == 0 else below + above,
                       dict(fontsize=7, color=colour)))
    for p64 in p64s:
        which = ""
        if len(p64s) > 1:
            which = " (matrix)" if p64 == p64s[0] else " (vector)"
        ax.loglog(x, roof_native(x, p64, bw), color="tab:blue", lw=2,
                  ls="--" if which == " (vector)" else "-",
                  label=f"native FP64{which}: {p64:g} TFLOP/s")
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
                lines.append(f"{xo:.3g}{which}")
                ax.axvline(xo, color="tab:purple", lw=0.8, ls="-.",
                           label=("_nolegend_" if len(lines) > 1 else
                                  "crossover if reconstruction were free (gamma=0)" if overhead
                                  else "crossover: emulation faster right of it"))
                text = (f"crossover I={xo:.3g}{which}: emulation faster to the right"
                        if not overhead else f"crossover I={xo:.3g}{which} at gamma=0 (free "
                                             "reconstruction)")
                labels.append((text, (xo, 0.3),  # y: axes fraction
                               [(-3, 0, "right"), (3, 0, "left"), (-3, 40, "right"), (3, 40, "left")],
                               dict(fontsize=7, color="tab:purple", rotation=90, va="center",
                                    xycoords=ax.get_xaxis_transform())))
            else:
                notes.append(f"{_substrate(scheme, None, None)} at alpha={alpha:g}: emulation "
                             f"never beats native FP64{which} (ceiling Plow/alpha = "
                             f"{plow / alpha:.3g} <= {p64:g} TFLOP/s).")
    if lines:
        where = " and ".join(lines)
        if len(lines) > 1:
            where += " (GEMMs: the matrix line; other kernels: the vector one)"
        if overhead:
            notes.insert(0, f"Purple line{'s' if len(lines) > 1 else ''}: I = beta P64/Bmem = "
                            f"{where}, where emulation would start to beat native FP64 if "
                            "reconstruction were free (gamma=0). The ceilings leave "
                            "reconstruction out: it pulls triangles below them and moves "
                            "each kernel's own crossover right.")
        else:
            notes.insert(0, f"Purple line{'s' if len(lines) > 1 else ''}: crossover I = beta "
                            f"P64/Bmem = {where}: right of it emulation beats native FP64.")

    for p in sorted(preds, key=lambda p: p.intensity):
        ax.plot([p.intensity] * 2, [p.native_tflops, p.emulated_tflops], color="0.6", lw=0.8)
        ax.plot(p.intensity, p.native_tflops, "o", mfc="white", mec="tab:blue", ms=6)
        ax.plot(p.intensity, p.emulated_tflops, "^", color="tab:red", ms=6)
        points += [(p.intensity, p.native_tflops), (p.intensity, p.emulated_tflops)]
        labels.append((f"{p.kernel} x{p.speedup:.3g}", (p.intensity, p.emulated_tflops), _RIGHT,
                       dict(fontsize=7)))
    ax.plot([], [], "o", mfc="white", mec="tab:blue", ls="none", label="kernel, native FP64")
    ax.plot([], [], "^", color="tab:red", ls="none",
            label="kernel, emulated FP64; label xS: speedup = native time / emulated time")

    ax.set_xlim(lo, hi)
    ax.set_ylim(bottom, top)
    ax.set_xlabel("Arithmetic intensity [FLOP/byte]")
    ax.set_ylabel("Performance [TFLOP/s]")
    ax.set_title(f"{device.name} [{device.key}]\n{_subtitle(preds)}", fontsize=9)
    ax.grid(True, which="major", lw=0.3)
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.09), ncol=1,
              frameon=False)

    caption = []
    if overhead or any(p.crossover.kind != "above" for p in preds):
        with_recon = " (with its reconstruction)" if overhead else ""
        caption.append(f"Each kernel's own crossover{with_recon}: "
                       + _crossovers(preds) + ".")
    caption += notes
    for p in preds:
        if p.alpha_eff != p.alpha:
            r = p.alpha_eff / p.alpha
            caption.append(f"{p.kernel}: its emulation runs {r:.3g}x the native flops as GEMM "
                           f"products, so its own ceiling is {r:.3g}x below the one drawn.")
    return labels, points, "\n".join(caption)


def _subtitle(preds: Sequence[Prediction]) -> str:
    """The emulation in words: ``FP64 emulated on FP8 (accurate mode, 13-14 moduli);
    reconstruction 83-90 ps per output``."""
    schemes = "/".join(dict.fromkeys(p.scheme.upper() for p in preds))
    how = [m + " mode" for m in dict.fromkeys(p.mode for p in preds if p.mode)]
    moduli = [p.moduli for p in preds if p.moduli is not None]
    if moduli:
        how.append(f"{_span(moduli)} moduli")
    else:
        how.append(f"alpha={_span((p.alpha for p in preds))}")
    betas = [p.beta for p in preds]
    if any(b != 1 for b in betas):
        how.append(f"traffic x beta={_span(betas)}")
    gammas = [p.gamma for p in preds]
    recon = ("reconstruction free (gamma=0)" if max(gammas) == 0 else
             f"reconstruction gamma = {_gamma_span(gammas)} per output")
    return f"FP64 emulated on {schemes} ({', '.join(how)}); {recon}"


def _gamma_span(gammas) -> str:
    """``90 ps``, or ``83-90 ps`` for several (``0.9 ns to 1.2 us`` across units)."""
    vals = sorted(set(gammas))
    lo, hi = _seconds(vals[0]), _seconds(vals[-1])
    if len(vals) == 1:
        return lo
    if lo.split()[1] == hi.split()[1]:
        return f"{lo.split()[0]}-{hi}"
    return f"{lo} to {hi}"


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
    import textwrap

    plt = load_pyplot()
    n = len(panels)
    fig, axes = plt.subplots(1, n, figsize=(7.5 * n, 8.0), squeeze=False)
    drawn = [_panel(ax, device, preds) for ax, (device, preds) in zip(axes[0], panels)]
    captions = ["\n".join(textwrap.fill(par, 125) for par in cap.split("\n"))
                for _, _, cap in drawn]
    lines = max(c.count("\n") + 1 if c else 0 for c in captions)
    below = lines * 7.5 * 1.25 / 72 + 0.1  # inches of caption under the legends
    fig.set_figheight(fig.get_figheight() + below)
    height = fig.get_figheight()
    reserve = below / height
    if suptitle:
        fig.suptitle(f"TME model - {suptitle}", fontsize=10)
    fig.tight_layout(rect=(0, reserve, 1, 1))
    for i, cap in enumerate(captions):
        fig.text((i + 0.5) / n, 0.06 / height, cap, ha="center", va="bottom", fontsize=7.5,
                 multialignment="left")
    for ax, (lab, points, _) in zip(axes[0], drawn):
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
    plt = load_pyplot()
    try:
        fig.savefig(path, dpi=dpi)
    finally:
        plt.close(fig)
