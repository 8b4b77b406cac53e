"""PNG figures (matplotlib, Agg): error against moduli, auto against native, auto's count."""

from __future__ import annotations

from pathlib import Path

import matplotlib
import matplotlib.ticker

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from .report import PEERS, SCHEMES, U, auto_run, regular_cases, table_cases  # noqa: E402

FLOOR = 1e-4  # exact results (error 0) are drawn here, in units of u


def _u(x):
    return max(float(x) / U, FLOOR)


def error_vs_moduli(res, out: Path) -> list[tuple[str, str]]:
    cases = table_cases(res)
    if not cases:
        return []
    made = []
    colors = plt.cm.viridis(np.linspace(0, 0.9, len(cases)))
    for scheme in SCHEMES:
        fig, axes = plt.subplots(1, 2, figsize=(11, 4.2), sharey=True)
        for ax, mode in zip(axes, ("accurate", "fast")):
            for c, col in zip(cases, colors):
                runs = sorted((r["requested"], r["max_nrm"]) for r in c["runs"]
                              if r["scheme"] == scheme and r["mode"] == mode
                              and r["requested"] != "auto")
                ax.semilogy([n for n, _ in runs], [_u(e) for _, e in runs], "o-", ms=3,
                            color=col, label=f"phi={c['phi_label']}")
                ax.axhline(_u(c["native"]["max_nrm"]), color=col, ls=":", lw=1)
                a = auto_run(c, scheme, mode)
                ax.plot([a["num_moduli"]], [_u(a["max_nrm"])], "*", ms=11, color=col,
                        mec="k", mew=0.5)
            for s, n, who in PEERS:
                if s == scheme:
                    ax.axvline(n, color="tab:red", ls="--", lw=0.8)
                    ax.text(n, ax.get_ylim()[1], f" {who} {n}", rotation=90, va="top",
                            fontsize=7, color="tab:red")
            ax.axhline(1.0, color="k", lw=0.8)
            ax.set_title(f"{scheme}, {mode} mode (k={cases[0]['k']})")
            ax.set_xlabel("number of moduli")
            ax.grid(alpha=0.3)
        axes[0].set_ylabel("max |C - AB| / (|A||B|)  [u]")
        axes[0].legend(fontsize=7, ncol=2, title="dotted: native; star: auto",
                       title_fontsize=7)
        fig.tight_layout()
        name = f"error_vs_moduli_{scheme}.png"
        fig.savefig(out / name, dpi=110)
        plt.close(fig)
        made.append((name, f"Error against the number of moduli, scheme {scheme}"))
    return made


def auto_vs_native(res, out: Path) -> list[tuple[str, str]]:
    cases = regular_cases(res)
    x = np.arange(len(cases))
    fig, axes = plt.subplots(len(SCHEMES), 1, sharex=True,
                             figsize=(max(10, 0.22 * len(cases) + 3), 3.7 * len(SCHEMES)))
    for ax, scheme in zip(axes, SCHEMES):
        acc = [auto_run(c, scheme, "accurate") for c in cases]
        fast = [auto_run(c, scheme, "fast") for c in cases]
        ax.semilogy(x, [_u(c["native"]["max_nrm"]) for c in cases], "s", ms=5, mfc="none",
                    color="tab:gray", label="native error")
        ax.semilogy(x, [_u((a.get("bound") or {}).get("max_bound_nrm", 0)) for a in acc], "v",
                    ms=5, color="tab:orange", label="auto certified bound (max)")
        ax.semilogy(x, [_u(a["max_nrm"]) for a in acc], "o", ms=4, color="tab:blue",
                    label="auto accurate error")
        ax.semilogy(x, [_u(f["max_nrm"]) for f in fast], "x", ms=4, color="tab:green",
                    label="auto fast error")
        fb = [i for i, a in enumerate(acc) if a["fallback_entries"]]
        ax.semilogy(fb, [_u(acc[i]["max_nrm"]) for i in fb], "o", ms=9, mfc="none",
                    color="tab:red", label="exact fallback")
        ax.axhline(1.0, color="k", lw=0.8)
        ax.set_ylabel(f"{scheme}: max err / (|A||B|)  [u]", fontsize=8)
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=7, ncol=5, loc="upper left")
    axes[-1].set_xticks(x)
    axes[-1].set_xticklabels([c["name"] for c in cases], rotation=90, fontsize=6)
    fig.tight_layout()
    name = "auto_vs_native.png"
    fig.savefig(out / name, dpi=110)
    plt.close(fig)
    return [(name, "Auto's error and bound against native, per case (0 drawn at 1e-4 u)")]


def auto_counts(res, out: Path) -> list[tuple[str, str]]:
    cases = [c for c in res["cases"] if c["family"] == "phi" and not c["params"].get("large")]
    labels = list(dict.fromkeys(c["phi_label"] for c in cases))
    colors = dict(zip(labels, plt.cm.viridis(np.linspace(0, 0.9, len(labels)))))
    fig, axes = plt.subplots(1, len(SCHEMES), figsize=(4.4 * len(SCHEMES), 4))
    for ax, scheme in zip(axes, SCHEMES):
        for lab in labels:
            cs = sorted((c for c in cases if c["phi_label"] == lab), key=lambda c: c["k"])
            ks = [c["k"] for c in cs]
            ax.semilogx(ks, [auto_run(c, scheme, "accurate")["num_moduli"] for c in cs], "o-",
                        base=2, ms=3, color=colors[lab], label=f"phi={lab}")
            ax.semilogx(ks, [auto_run(c, scheme, "fast")["num_moduli"] for c in cs], "x--",
                        base=2, ms=3, color=colors[lab], lw=0.8)
        for s, n, who in PEERS:
            if s == scheme:
                ax.axhline(n, color="tab:red", ls="--", lw=0.8)
                ax.text(ax.get_xlim()[0], n, f"{who} {n}", fontsize=7, color="tab:red",
                        va="bottom")
        ax.set_title(f"{scheme}: auto's count (solid accurate, dashed fast)", fontsize=9)
        ax.yaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))
        ax.set_xlabel("k")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("number of moduli")
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    name = "auto_count.png"
    fig.savefig(out / name, dpi=110)
    plt.close(fig)
    return [(name, "The count auto chooses against k, per phi")]


def all_plots(res, out: Path) -> list[tuple[str, str]]:
    return error_vs_moduli(res, out) + auto_counts(res, out) + auto_vs_native(res, out)
