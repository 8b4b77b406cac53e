"""A GPU cluster's HPL in the model of :mod:`tme_model.hpl_network` (modelled, not measured).

:func:`cluster_rows` prices an HPL run on ``ranks`` GPUs of the device database (the
grid as square as the count allows, the matrix filling a share of each GPU's memory,
:func:`hpl_order`) with :func:`~tme_model.hpl_network.hpl_time` on a
:class:`DeviceMachine`: native FP64 against FP8 Ozaki-II trailing updates, every rate
with its source; :func:`markdown` prints it.  ``python -m tme_model.hpl_cluster --gpu
b300 --ranks 64 --network ndr`` (or ``python -m tme_model.hpl_network`` with the same
arguments).
"""

from __future__ import annotations

import json
import math
import numbers
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from .hpl_network import cyclic_count, hpl_time
from .lu_projection import PANEL_MODELS, hpl_flops
from .network import BCASTS, Network
from .specs import TMEError

__all__ = ["DeviceMachine", "cluster_rows", "hpl_order", "main", "markdown"]


def _positive(name: str, v) -> None:
    if isinstance(v, bool) or not isinstance(v, numbers.Integral) or v < 1:
        raise ValueError(f"{name} must be a positive int, got {v!r}")


@dataclass(frozen=True)
class DeviceMachine:
    """One GPU of the database: the loops at its FP64 vector rate or bandwidth, the
    updates by the TME model (:func:`~tme_model.model.predict`, the ``scenario``'s
    emulation for inner dimension ``w``), as :mod:`tme_model.lu_projection` prices them."""

    device: object
    scenario: object = None
    _emulations: dict = field(default_factory=dict, init=False, compare=False, repr=False)

    def emulation(self, w: int):
        """The :class:`~tme_model.model.Emulation` of an update of inner dimension ``w``."""
        from .scenario import Scenario
        from .workloads import Kernel
        if w not in self._emulations:
            sc = self.scenario if self.scenario is not None else Scenario()
            kern = Kernel("hpl-update", 2.0 * w ** 3, 32.0 * w * w, float(w * w), w, matrix=True)
            self._emulations[w] = sc.emulation(self.device, kern)
        return self._emulations[w]

    def pass_s(self, nbytes: float) -> float:
        return nbytes / (self.device.bandwidth() * 1e12)

    def level2_s(self, flops: float, nbytes: float) -> float:
        return max(flops / (self.device.p64(False) * 1e12), self.pass_s(nbytes))

    def trsm_s(self, w: int, cols: int) -> float:
        return max(cols * w * (w - 1) / (self.device.p64(True) * 1e12),
                   self.pass_s(8.0 * (w * w / 2 + 2 * w * cols)))

    def update_s(self, m: int, n: int, w: int, emulated: bool, whole: tuple) -> float:
        from .model import predict
        from .workloads import Kernel
        if not (m and n and w):
            return 0.0
        kern = Kernel(f"hpl-update:{m}x{n}x{w}", 2.0 * m * n * w, 8.0 * (m * w + w * n + 2 * m * n),
                      float(m * n), w, matrix=True, n_in=float(m * w + w * n))
        pred = predict(kern, self.device, self.emulation(w))
        return pred.emulated_s if emulated else pred.native_s


def hpl_order(device, P: int, Q: int, nb: int, fill: float = 0.8) -> int:
    """The largest multiple of ``nb`` whose largest block-cyclic share (``8 m_p n_q``
    bytes) fills at most ``fill`` of one GPU's memory (``mem_size``)."""
    for name, v in (("nb", nb), ("P", P), ("Q", Q)):
        _positive(name, v)
    if not (isinstance(fill, (int, float)) and 0.0 < fill <= 1.0):
        raise ValueError(f"fill must be in (0, 1], got {fill!r}")
    room = fill * device.require("mem_size") * 1e9
    n = nb * int(math.sqrt(room * P * Q / 8) // nb)
    while n > nb and 8.0 * cyclic_count(n, nb, P, 0) * cyclic_count(n, nb, Q, 0) > room:
        n -= nb  # process 0 holds the most rows and columns
    return max(n, nb)


def _sources(dev, net: Network) -> list[str]:
    lines = []
    for f in ("fp8", "fp64_vector", "fp64_matrix", "mem_bw", "mem_size"):
        fig = dev.figures.get(f)
        if fig is not None:
            note = f" ({fig.note})" if fig.note else ""
            lines.append(f"{dev.key} {f} = {fig.value:g}: {fig.source_text}{note}")
    path = Path(__file__).parent / "data" / "networks.toml"
    data = tomllib.loads(path.read_text())
    entry, cites = data.get("networks", {}).get(net.key), data.get("sources", {})
    for f, unit in (("alpha_us", "us"), ("beta_gbps", "GB/s")):
        if entry is None:
            lines.append(f"{net.key} {f}: {net.source}")
            continue
        e = entry[f]
        keys = str(e.get("source", "")).strip("[]").split("][")
        lines.append(f"{net.key} {f} = {e['value']:g} {unit}: "
                     + "; ".join(cites.get(s, s) for s in keys)
                     + (f" (inferred: {e['note']})" if e.get("inferred") else ""))
    return lines


def cluster_rows(gpu: str = "b300", ranks: int = 64, network: str = "ndr", nb: int = 1024,
                 fill: float = 0.8, bcast: str = "scatter-allgather", lookahead: bool = False,
                 panel: str = "streamed") -> dict:
    """An HPL run on ``ranks`` GPUs (the grid as square as the count allows), native FP64
    against FP8 Ozaki-II trailing updates (accurate mode, moduli for ``k = nb``; the
    reconstruction fused, ``gamma = 0``, or at its estimated cost).

    Returns
    -------
    dict
        ``n`` (:func:`hpl_order`), ``grid``, ``sources`` (every rate's) and ``rows``:
        per run, seconds per phase (the factorisation's and ``solve``), ``total_s``,
        ``tflops`` (HPL's count), ``tflops_per_gpu`` and ``speedup`` (native / this).
    """
    from .cluster import grid_shape
    from .network import load_network
    from .scenario import Scenario
    from .specs import get_device, load_devices

    _positive("ranks", ranks)
    _positive("nb", nb)
    dev, net = get_device(gpu, load_devices()), load_network(network)
    P, Q = grid_shape(int(ranks))
    n = hpl_order(dev, P, Q, nb, fill)
    rows, sources = [], _sources(dev, net)
    for label, emulated, sc in (("native FP64", False, Scenario(scheme="fp8", gamma=0.0)),
                                ("FP8 Ozaki-II, gamma 0", True, Scenario(scheme="fp8", gamma=0.0)),
                                ("FP8 Ozaki-II, gamma est.", True, Scenario(scheme="fp8"))):
        machine = DeviceMachine(dev, sc)
        t = hpl_time(n, nb, P, Q, machine, net, emulated=emulated, lookahead=lookahead,
                     bcast=bcast, panel=panel)
        emu = machine.emulation(nb)
        if emulated:
            sources.append(f"{label}: {emu.scheme}, N = {emu.moduli} moduli for k = {nb} "
                           f"({sc.grade} grade, {emu.mode} mode), alpha = {emu.alpha:g} "
                           f"(ozaki's GEMM count), gamma = {emu.gamma:.3g} s per output "
                           f"({emu.gamma_source})")
        rows.append({"run": label, "emulated": emulated,
                     "substrate": f"{emu.scheme} N={emu.moduli}" if emulated else "fp64",
                     **{f"{k}_s": v for k, v in t["phases"].items()},
                     "solve_s": t["solve_s"], "panel_hidden_s": t["panel_hidden_s"],
                     "communication_s": t["communication_s"], "total_s": t["total_s"],
                     "tflops": hpl_flops(n) / t["total_s"] / 1e12})
    for r in rows:
        r["tflops_per_gpu"] = r["tflops"] / (P * Q)
        r["speedup"] = rows[0]["total_s"] / r["total_s"]
    return {"gpu": dev.key, "network": net.key, "ranks": P * Q, "grid": f"{P}x{Q}", "n": n,
            "nb": nb, "fill": fill, "bcast": bcast, "lookahead": lookahead, "panel": panel,
            "rows": rows, "sources": sources}


def markdown(proj: dict) -> str:
    """:func:`cluster_rows`' projection as a Markdown table, then its sources."""
    cols = ("panel", "broadcasts", "interchanges", "triangular", "updates", "solve", "total")
    out = [f"MODELLED (not measured): HPL n = {proj['n']}, nb = {proj['nb']} on {proj['ranks']} "
           f"{proj['gpu']} ({proj['grid']}) over {proj['network']}; broadcasts {proj['bcast']}, "
           f"look-ahead {'on' if proj['lookahead'] else 'off'}, panel {proj['panel']}", "",
           "| run | substrate | " + " | ".join(f"{c} s" for c in cols)
           + " | TFLOP/s | TFLOP/s per GPU | speed-up |", "|" + "---|" * (len(cols) + 5)]
    for r in proj["rows"]:
        out.append(f"| {r['run']} | {r['substrate']} | "
                   + " | ".join(f"{r[c + '_s']:.4g}" for c in cols)
                   + f" | {r['tflops']:.4g} | {r['tflops_per_gpu']:.4g} | {r['speedup']:.3g}x |")
    return "\n".join(out + ["", "Sources:"] + [f"- {s}" for s in proj["sources"]])


def main(argv=None, prog: str = "python -m tme_model.hpl_cluster") -> int:
    """``python -m tme_model.hpl_cluster``: :func:`cluster_rows` as Markdown or JSON."""
    import argparse

    p = argparse.ArgumentParser(prog=prog, description="Distributed HPL on a GPU cluster in "
                                "the TME model (modelled, not measured). With --check JSON: "
                                "the model against measured runs (python -m "
                                "tme_model.hpl_check --help).")
    p.add_argument("--gpu", default="b300", help="a device key (default b300)")
    p.add_argument("--ranks", type=int, default=64, help="GPUs (default 64)")
    p.add_argument("--network", default="ndr", help="a key of data/networks.toml or a "
                   "calibration JSON of benchmarks.mpi.network (default: ndr)")
    p.add_argument("--nb", type=int, default=1024, help="panel width (default 1024)")
    p.add_argument("--fill", type=float, default=0.8,
                   help="share of each GPU's memory the matrix fills (default 0.8)")
    p.add_argument("--bcast", choices=BCASTS, default="scatter-allgather",
                   help="broadcasts (default: scatter-allgather)")
    p.add_argument("--lookahead", action="store_true",
                   help="hide each panel behind the previous update")
    p.add_argument("--panel", choices=PANEL_MODELS, default="streamed",
                   help="the panel's traffic (default: streamed)")
    p.add_argument("--format", choices=("markdown", "json"), default="markdown")
    a = p.parse_args(argv)
    try:
        proj = cluster_rows(a.gpu, a.ranks, a.network, a.nb, a.fill, a.bcast, a.lookahead,
                            a.panel)
    except (TMEError, ValueError, OSError, json.JSONDecodeError) as exc:
        p.error(str(exc))
    print(json.dumps(proj, indent=1) if a.format == "json" else markdown(proj))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
