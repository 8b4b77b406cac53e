"""Cluster-scale projection of the distributed SUMMA (modelled, not measured).

``python -m tme_model.cluster [--gpu h100] [--network ndr] [--gpus 4,16,64]
[--n 16384,65536] [--format markdown|json] [--plot FILE]`` prints, per GPU count and
size, the TME model of one GPU's local products (native FP64 and emulated, fast mode,
:func:`tme_model.model.predict` on the local ``m x n x K`` GEMM) plus the alpha-beta
network term of :mod:`tme_model.network` (the panel broadcasts, flat and
scatter-allgather), with no overlap (what ``ozaki.distributed`` does: blocking
broadcasts) and the network roof (perfect overlap).
"""

from __future__ import annotations

import argparse
import json
import math

from .network import BCASTS, load_network, network_roof_tflops, summa_comm_s

__all__ = ["cluster_rows", "cluster_figure", "main"]


def grid_shape(r: int) -> tuple[int, int]:
    P = max(d for d in range(1, int(math.isqrt(r)) + 1) if r % d == 0)
    return P, r // P


def cluster_rows(gpu: str = "h100", network: str = "ndr", gpus=(4, 16, 64),
                 sizes=(16384, 65536), panel: int = 512) -> list[dict]:
    """One row per (GPU count, n): modelled seconds and TFLOP/s per GPU."""
    from .model import predict
    from .scenario import Scenario
    from .specs import get_device, load_devices
    from .workloads import dense_gemm

    dev, net = get_device(gpu, load_devices()), load_network(network)
    rows = []
    for r in gpus:
        P, Q = grid_shape(r)
        for n in sizes:
            m, c = -(-n // P), -(-n // Q)  # the largest block
            kern = dense_gemm(m, c, n)
            pr = predict(kern, dev, Scenario(mode="fast").emulation(dev, kern))
            comm = {b: summa_comm_s(net, n, n, n, P, Q, panel, b) for b in BCASTS}
            flops = 2.0 * n ** 3 / r
            row = {"gpus": r, "grid": f"{P}x{Q}", "n": n, "gpu": dev.key, "network": net.key,
                   "scheme": pr.scheme, "moduli": pr.moduli, "panel": panel,
                   "native_compute_s": pr.native_s, "emulated_compute_s": pr.emulated_s}
            for b, t in comm.items():
                row[f"comm_{b}_s"] = t
            t = comm["scatter-allgather"]
            row["native_s"], row["emulated_s"] = pr.native_s + t, pr.emulated_s + t
            row["native_tflops_per_gpu"] = flops / row["native_s"] / 1e12
            row["emulated_tflops_per_gpu"] = flops / row["emulated_s"] / 1e12
            row["network_roof_tflops_per_gpu"] = network_roof_tflops(
                net, n, n, n, P, Q, panel, "scatter-allgather")
            row["speedup"] = row["native_s"] / row["emulated_s"]
            row["speedup_without_network"] = pr.native_s / pr.emulated_s
            rows.append(row)
    return rows


def markdown(rows: list[dict]) -> str:
    """The rows as a Markdown table (times in ms, rates in TFLOP/s per GPU)."""
    head = ("| GPUs | grid | n | native compute ms | emulated compute ms | comm ms (flat) | "
            "comm ms (scatter-allgather) | native TF/GPU | emulated TF/GPU | network roof "
            "TF/GPU | speedup (without network) |")
    out = [head, "|" + "---|" * 11]
    for r in rows:
        out.append(f"| {r['gpus']} | {r['grid']} | {r['n']} | {1e3 * r['native_compute_s']:.1f} | "
                   f"{1e3 * r['emulated_compute_s']:.1f} | {1e3 * r['comm_flat_s']:.1f} | "
                   f"{1e3 * r['comm_scatter-allgather_s']:.1f} | "
                   f"{r['native_tflops_per_gpu']:.1f} | {r['emulated_tflops_per_gpu']:.1f} | "
                   f"{r['network_roof_tflops_per_gpu']:.1f} | {r['speedup']:.2f} "
                   f"({r['speedup_without_network']:.2f}) |")
    return "\n".join(out)


def cluster_figure(rows: list[dict], path: str) -> None:
    """Per-GPU TFLOP/s against n for each GPU count: native, emulated, network roof."""
    from .plot import load_pyplot

    plt = load_pyplot()
    counts = sorted({r["gpus"] for r in rows})
    fig, axes = plt.subplots(1, len(counts), figsize=(4 * len(counts), 3.8), squeeze=False)
    for ax, g in zip(axes[0], counts):
        rs = sorted((r for r in rows if r["gpus"] == g), key=lambda r: r["n"])
        n = [r["n"] for r in rs]
        ax.loglog(n, [r["native_tflops_per_gpu"] for r in rs], "o-", label="native FP64")
        ax.loglog(n, [r["emulated_tflops_per_gpu"] for r in rs], "s-",
                  label=f"emulated ({rs[0]['scheme']})")
        ax.loglog(n, [r["network_roof_tflops_per_gpu"] for r in rs], "k--",
                  label="network roof (perfect overlap)")
        ax.set_title(f"{g} GPUs ({rs[0]['grid']}), MODELLED", fontsize=9)
        ax.set_xticks(n, [f"{v // 1024}k" for v in n])
        ax.xaxis.set_minor_formatter(plt.NullFormatter())
        ax.set_xlabel("n (square GEMM)")
        ax.set_ylabel("TFLOP/s per GPU")
        ax.grid(alpha=0.3, which="both")
    axes[0][0].legend(fontsize=7)
    r0 = rows[0]
    fig.suptitle(f"Modelled SUMMA on {r0['gpu']} over {r0['network']} (TME + alpha-beta, "
                 f"scatter-allgather broadcasts, no overlap; panel {r0['panel']})", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def positive_ints(text: str) -> list[int]:
    vals = [int(v) for v in text.split(",") if v.strip()]
    if not vals or min(vals) < 1:
        raise argparse.ArgumentTypeError(f"need positive integers, got {text!r}")
    return vals


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m tme_model.cluster", description=__doc__)
    p.add_argument("--gpu", default="h100")
    p.add_argument("--network", default="ndr", help="key of data/networks.toml or a "
                                                     "calibration JSON")
    p.add_argument("--gpus", type=positive_ints, default=[4, 16, 64])
    p.add_argument("--n", type=positive_ints, default=[8192, 16384, 32768, 65536])
    p.add_argument("--panel", type=int, default=512)
    p.add_argument("--format", choices=("markdown", "json"), default="markdown")
    p.add_argument("--plot", metavar="FILE")
    a = p.parse_args(argv)
    from .specs import TMEError
    try:
        rows = cluster_rows(a.gpu, a.network, a.gpus, a.n, a.panel)
    except TMEError as exc:
        p.error(str(exc))
    print(json.dumps(rows, indent=2) if a.format == "json" else
          "MODELLED (not measured)\n\n" + markdown(rows))
    if a.plot:
        cluster_figure(rows, a.plot)
        print(f"plot -> {a.plot}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
