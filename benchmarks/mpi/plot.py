"""The sweep plots of :mod:`benchmarks.mpi.summa`, :mod:`~benchmarks.mpi.fft3d` and
:mod:`~benchmarks.mpi.hpl` (matplotlib, Agg, rank 0 only)."""

from __future__ import annotations

import numpy as np

KINDS = (("emulated", "tab:blue"), ("native", "tab:orange"))


def by_ranks(runs: list, kind: str):
    """The runs of ``kind`` in order of ranks, with their ranks and oversubscribed flags
    as arrays."""
    rs = sorted((r for r in runs if r["kind"] == kind), key=lambda r: r["ranks"])
    return (rs, np.array([r["ranks"] for r in rs]),
            np.array([r["oversubscribed"] for r in rs], bool))


def _pyplot():
    """matplotlib's pyplot on the Agg backend (no display needed)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def _label_axes(axes, runs: list, ylabels) -> None:
    for ax, yl in zip(axes, ylabels):
        ax.set_xlabel("MPI ranks (one thread each)")
        ax.set_ylabel(yl)
        ax.set_xticks(sorted({r["ranks"] for r in runs}))
        ax.grid(alpha=0.3)


def sweep_figure(doc: dict, path: str) -> None:
    """Time and GFLOP/s against ranks: measured (markers; hollow where oversubscribed)
    and modelled (dashed), emulated and native."""
    plt = _pyplot()

    runs, meta = doc["runs"], doc["meta"]
    fig, axes = plt.subplots(1, 2, figsize=(10, 4.2))
    for kind, colour in KINDS:
        rs, x, over = by_ranks(runs, kind)
        if not rs:
            continue
        t = np.array([r["seconds"] for r in rs])
        tp = np.array([r["predicted_s"] for r in rs])
        n = np.array([r["n"] for r in rs], float)
        for ax, y, yp in ((axes[0], t, tp), (axes[1], 2 * n ** 3 / t / 1e9,
                                              2 * n ** 3 / tp / 1e9)):
            ax.plot(x, yp, "--", color=colour, label=f"{kind}, modelled (TME + alpha-beta)")
            ax.plot(x[~over], y[~over], "o-", color=colour, label=f"{kind}, measured")
            if over.any():
                ax.plot(x[over], y[over], "o", mfc="none", color=colour,
                        label=f"{kind}, measured, oversubscribed")
    label = {"strong": "strong scaling (fixed n)", "weak": "weak scaling (n ~ ranks^(1/3))"}
    sizes = ", ".join(f"{r['ranks']}: n={r['n']} {r['grid']}" for r in runs
                      if r["kind"] == "native")
    _label_axes(axes, runs, ("time [s]", "GFLOP/s (2 n^3 / t)"))
    cores = meta["cores"]
    for ax in axes:
        ax.axvspan(cores + 0.5, max(r["ranks"] for r in runs) + 0.5, color="0.9", zorder=0)
        ax.text(cores + 0.6, ax.get_ylim()[1], "oversubscribed:\ncorrectness, not speed",
                va="top", fontsize=8)
    axes[1].legend(fontsize=7, loc="lower left")
    fig.suptitle(f"SUMMA, {label.get(meta['sweep'], '')} on {cores} cores, panel "
                 f"{meta['panel']} ({sizes})", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def fft_figure(doc: dict, path: str) -> None:
    """Strong scaling of the distributed 3-D FFT: time against ranks, slabs (circles) and
    pencils (squares), emulated and native plans, measured (hollow where oversubscribed)
    and modelled (crosses, dotted)."""
    plt = _pyplot()

    runs, meta = doc["runs"], doc["meta"]
    fig, ax = plt.subplots(figsize=(9.6, 4.4))
    colours = {"emulated": "tab:blue", "native": "tab:orange"}
    for kind in ("emulated", "native"):
        for deco, mark in (("slab", "o"), ("pencil", "s"), ("serial", "o")):
            rs = sorted((r for r in runs if r["kind"] == kind and r["decomposition"] in
                         (deco, "serial" if deco == "slab" else "-")), key=lambda r: r["ranks"])
            if deco == "serial" or not rs:
                continue
            x = np.array([r["ranks"] for r in rs])
            t = np.array([r["seconds"] for r in rs])
            over = np.array([r["oversubscribed"] for r in rs])
            c = colours[kind]
            ax.plot(x, [r["predicted_s"] for r in rs], ":", color=c, marker="+", ms=9,
                    label=f"{kind} {deco}, modelled (TME + alpha-beta)")
            if (~over).any():
                ax.plot(x[~over], t[~over], "-", color=c, marker=mark, label=f"{kind} {deco}")
            if over.any():
                ax.plot(x[over], t[over], mark, mfc="none", color=c,
                        label=f"{kind} {deco}, oversubscribed")
    cores = meta["cores"]
    top = max(r["ranks"] for r in runs)
    if top > cores:
        ax.axvspan(cores + 0.5, top + 0.5, color="0.9", zorder=0)
        ax.text(cores + 0.6, 0.98, "oversubscribed:\ncorrectness,\nnot speed", va="top",
                fontsize=8, transform=ax.get_xaxis_transform())
    ax.set_yscale("log")
    ax.set_xlabel("MPI ranks (one thread each)")
    ax.set_ylabel("forward transform time [s]")
    ax.set_xticks(sorted({r["ranks"] for r in runs}))
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1.0))
    ax.set_title(f"{meta['transform']} {meta['n']}^3, strong scaling on {cores} cores "
                 f"(pencils: 2x2)", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def hpl_figure(doc: dict, path: str) -> None:
    """Time and parallel efficiency against ranks, emulated and native (hollow markers:
    oversubscribed runs)."""
    plt = _pyplot()

    runs, meta = doc["runs"], doc["meta"]
    fig, axes = plt.subplots(1, 2, figsize=(10, 4.2))
    for kind, colour in KINDS:
        rs, x, over = by_ranks(runs, kind)
        if not rs:
            continue
        eff = np.array([np.nan if r["efficiency"] is None else r["efficiency"] for r in rs])
        for ax, y in ((axes[0], np.array([r["seconds"] for r in rs])), (axes[1], eff)):
            ax.plot(x, y, "-", color=colour, alpha=0.5)
            ax.plot(x[~over], y[~over], "o", color=colour, label=kind)
            if over.any():
                ax.plot(x[over], y[over], "o", mfc="none", color=colour,
                        label=f"{kind}, oversubscribed")
    axes[1].axhline(1.0, color="0.6", lw=0.8)
    _label_axes(axes, runs, ("time: factor + solve [s]", "parallel efficiency (T1 / (r Tr))"))
    axes[1].legend(fontsize=8)
    sizes = ", ".join(f"{r['ranks']}: n={r['n']} {r['grid']}" for r in runs
                      if r["kind"] == "native")
    fig.suptitle(f"HPL, {meta['sweep'] or 'one'} sweep, nb {meta['nb']}, {meta['cores']} "
                 f"cores ({meta['isa']}); {sizes}", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
