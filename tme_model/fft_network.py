"""The distributed 3-D FFT (:mod:`fft.distributed`) in the model: its exchanges and time.

The transform runs as :mod:`fft.distributed` runs it: the axes last to first, each
made local first by one ``Alltoallv`` exchange along a process row or column when it
is not. :func:`fft3d_steps` walks that schedule on a ``P x Q`` grid and gives, per
rank, the columns of every local transform and the bytes of every exchange (exactly:
an exchange sends all the rank holds but the piece it keeps). :func:`fft3d_time`
prices it per rank:

* **transforms**: each local plan's stage products (:meth:`Profile.predict_gemm` at
  the stage shapes of :func:`tme_model.fft_workload.plan_workload` on the rank's
  columns) and twiddle passes, each term divided by the rank's rate for that kind of
  work relative to the profile (``rates``);
* **passes**: the layout passes around them (:data:`~tme_model.fft_workload.LAYOUT_BYTES`
  per complex point: the split; the axis moves of
  :func:`fft.transforms.transform_along`, two tiled transposes for axis 2, one copy for
  axis 1 and none for axis 0 of a block that arrives C-ordered; packing and unpacking
  per exchange; the interleaved result), over the profile's bandwidth times the rank's
  streaming rate;
* **network**: per exchange ``(s - 1) alpha + bytes / beta`` (:class:`~tme_model.network.Network`,
  flat convention, as :mod:`ozaki.distributed.traffic` counts it).

The predicted time is the slowest rank's sum: no overlap of communication and
computation (the implementation has none).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from .fft_workload import LAYOUT_BYTES, TWIDDLE_BYTES, plan_workload
from .network import Network, RankRates, block_bounds
from .profile import Profile

__all__ = ["Exchange", "LocalTransform", "fft3d_steps", "fft3d_time", "fft3d_flops",
           "fft3d_cluster_rows", "markdown", "main"]


@dataclass(frozen=True)
class Exchange:
    """One ``Alltoallv``: ``axis`` made local along the grid's ``along`` ("row" or "col").

    ``before`` and ``after`` are the layouts (``split``); ``itemsize`` is 16 for complex
    data (split: two float64), 8 for real; ``bytes``, ``points`` and ``received`` are per
    rank (rank order ``r = p Q + q``): what it sends, the points it holds before the
    exchange (packed) and after it (unpacked).
    """

    axis: int
    along: str
    size: int
    before: tuple[int, int]
    after: tuple[int, int]
    itemsize: int
    bytes: tuple[int, ...]
    points: tuple[int, ...]
    received: tuple[int, ...] = ()


@dataclass(frozen=True)
class LocalTransform:
    """One local 1-D transform of length ``length`` along ``axis`` on ``widths`` columns
    per rank; ``real_in`` for the real first stage of ``rfftn``."""

    axis: int
    length: int
    widths: tuple[int, ...]
    real_in: bool = False


def _sizes(shape, P: int, Q: int, split) -> np.ndarray:
    """``(P Q, 3)`` block lengths of every rank in layout ``split``."""
    out = np.tile(np.asarray(shape, np.int64), (P * Q, 1))
    p, q = np.divmod(np.arange(P * Q), Q)
    for axis, parts, i in ((split[0], P, p), (split[1], Q, q)):
        out[:, axis] = np.diff(block_bounds(int(shape[axis]), parts))[i]
    return out


def fft3d_steps(shape: Sequence[int], P: int, Q: int, transform: str = "c2c",
                axes: Sequence[int] = (0, 1, 2), split: tuple[int, int] = (0, 1)):
    """The schedule of a forward distributed transform, exchanges and local transforms.

    Parameters
    ----------
    shape : 3 ints
        The global input shape.
    P, Q : int
        The grid.
    transform : {"c2c", "r2c"}
        Complex ``fftn`` or ``rfftn`` (real input, half spectrum along ``axes[-1]``).
    axes : permutation of (0, 1, 2)
        Run last to first, as :func:`fft.distributed.fftn` runs them.
    split : the input layout

    Returns
    -------
    list of Exchange and LocalTransform, in the order they run
    """
    if transform not in ("c2c", "r2c"):
        raise ValueError(f"transform must be 'c2c' or 'r2c', got {transform!r}")
    shape = [int(n) for n in shape]
    if len(shape) != 3 or min(shape) < 1 or P < 1 or Q < 1:
        raise ValueError(f"need a 3-D shape of positive lengths and P, Q >= 1, got {shape}, "
                         f"{P}, {Q}")
    if sorted(axes) != [0, 1, 2]:
        raise ValueError(f"axes must be a permutation of (0, 1, 2), got {axes}")
    steps: list = []
    split = tuple(split)
    real = transform == "r2c"
    for ax in reversed(list(axes)):
        a, b = split
        c = 3 - a - b
        if ax != c:
            along, new = ("col", (c, b)) if ax == a else ("row", (a, c))
            s = P if along == "col" else Q
            held = _sizes(shape, P, Q, split).prod(axis=1)
            kept = _kept(shape, P, Q, split, new)
            item = 8 if real else 16
            if s > 1:
                after = _sizes(shape, P, Q, new).prod(axis=1)
                steps.append(Exchange(ax, along, s, split, new, item,
                                      tuple(int(x) for x in (held - kept) * item),
                                      tuple(int(x) for x in held),
                                      tuple(int(x) for x in after)))
            split = new
        sizes = _sizes(shape, P, Q, split)
        widths = tuple(int(x) for x in sizes.prod(axis=1) // shape[ax])
        steps.append(LocalTransform(ax, shape[ax], widths, real))
        if real:
            shape[ax] = shape[ax] // 2 + 1
            real = False
    return steps


def _kept(shape, P, Q, old, new) -> np.ndarray:
    """Points each rank holds in both layouts (the overlap of its two blocks)."""
    out = np.ones(P * Q, np.int64)
    p, q = np.divmod(np.arange(P * Q), Q)
    for axis in range(3):
        lo, hi = [], []
        for lay in (old, new):
            if axis in lay:
                parts, i = (P, p) if lay[0] == axis else (Q, q)
                e = block_bounds(int(shape[axis]), parts)
                lo.append(e[i])
                hi.append(e[i + 1])
            else:
                lo.append(np.zeros(P * Q, np.int64))
                hi.append(np.full(P * Q, shape[axis], np.int64))
        out *= np.maximum(0, np.minimum(hi[0], hi[1]) - np.maximum(lo[0], lo[1]))
    return out


def fft3d_flops(shape: Sequence[int], transform: str = "c2c") -> float:
    """The conventional count: ``5 N log2 N`` for ``N`` complex points, half for ``r2c``."""
    N = math.prod(int(n) for n in shape)
    return (5.0 if transform == "c2c" else 2.5) * N * math.log2(N) if N > 1 else 0.0


def _stage_s(profile: Profile, workload, stage, r: RankRates) -> float:
    """One stage product on this rank: the profile's terms over the rank's rates."""
    if workload.native:
        return profile.native_gemm_s(stage.m, stage.n, stage.k) / r.gemm
    t = profile.predict_gemm(workload.scheme, stage.num_moduli, workload.mode, stage.m,
                             stage.n, stage.k, engine=workload.engine)
    return (t.gemm_s / r.products + t.scale_s / r.scaling + t.residue_s / r.residues
            + t.recon_s / r.reconstruction + t.fixed_s / r.passes)


def fft3d_time(shape: Sequence[int], P: int, Q: int, profile: Profile, net: Network, *,
               transform: str = "c2c", plans=None, rates: RankRates | float = 1.0,
               **options) -> dict:
    """Predicted seconds of a forward distributed 3-D FFT (module docstring).

    Parameters
    ----------
    shape, P, Q, transform
        As :func:`fft3d_steps` (default axes and input layout).
    profile : Profile
        The calibration of one rank's machine.
    net : Network
    plans : sequence of 3 fft.Plan, optional
        One per axis (default :func:`fft.get_plan` of each length with ``options``).
    rates : tme_model.network.RankRates or float
        This rank's rates relative to the profile, kind of work by kind of work
        (measured with every rank running, e.g. by ``benchmarks.mpi.probe`` at a stage
        shape); a float: the same for all. Emulated stage products divide each term of
        :meth:`Profile.predict_gemm` by its rate, native ones by ``gemm``, the twiddle
        and layout passes by ``stream``.

    Returns
    -------
    dict
        ``total_s`` (the slowest rank), and that rank's ``transforms_s``, ``passes_s``,
        ``network_s``.
    """
    r = rates if isinstance(rates, RankRates) else RankRates.uniform(rates)
    steps = fft3d_steps(shape, P, Q, transform)
    if plans is None:
        from fft import get_plan

        plans = [get_plan(int(n), **options) for n in shape]
    bw = profile.mem_tbps * 1e12 * r.stream
    ranks = P * Q
    parts = {k: np.zeros(ranks) for k in ("transforms", "passes", "network")}
    # layout passes in complex points (LAYOUT_BYTES each); a real point counts half
    layout = np.zeros(ranks)
    if transform == "c2c":  # the split of each rank's block
        layout += _sizes([int(n) for n in shape], P, Q, (0, 1)).prod(axis=1)
    done: dict = {}
    ordered = True  # the block C-ordered in the array's axis order (as scattered)
    for st in steps:
        if isinstance(st, Exchange):
            parts["network"] += [net.message_s(b, st.size - 1) for b in st.bytes]
            layout += (np.asarray(st.points) + np.asarray(st.received)) * st.itemsize / 16
            ordered = True
            continue
        for i, w in enumerate(st.widths):
            if w == 0:
                continue
            key = (st.axis, w, st.real_in)
            if key not in done:
                wl = plan_workload(plans[st.axis], w, real_in=st.real_in)
                done[key] = (sum(_stage_s(profile, wl, g, r) for g in wl.stages)
                             + TWIDDLE_BYTES * wl.twiddle_points / bw)
            parts["transforms"][i] += done[key]
            # as fft.transforms.transform_along moves the axis: the last by tiled transposes
            # there and back, another by one copy there (none for axis 0 of C-ordered data)
            copies = ((0.5 if st.real_in else 1.0) + 1.0 if st.axis == 2 else
                      0.0 if st.axis == 0 and ordered else 1.0)
            layout[i] += st.length * w * copies
        ordered = st.axis != 1  # a middle axis comes back as a view
    last = steps[-1]
    layout += last.length * np.asarray(last.widths)  # the interleaved result
    parts["passes"] = LAYOUT_BYTES * layout / bw
    total = parts["transforms"] + parts["passes"] + parts["network"]
    i = int(np.argmax(total))
    return {"total_s": float(total[i]), "transforms_s": float(parts["transforms"][i]),
            "passes_s": float(parts["passes"][i]), "network_s": float(parts["network"][i])}


def fft3d_cluster_rows(gpu: str = "b300", network: str = "ndr", gpus=(4, 16, 64),
                       sizes=(1024, 2048), fused: bool = True) -> list[dict]:
    """The distributed 3-D FFT on a GPU cluster, modelled: one row per (GPU count, n).

    Each GPU runs its block's local transforms in the device projection of
    :func:`tme_model.fft_projection.project_fft` (native FP64 FFT against the emulated
    stages of :func:`fft.get_plan`'s plan, on the slowest rank's columns), and the
    exchanges of :func:`fft3d_steps` on pencils (the grid as square as the count allows)
    at ``(s - 1) alpha + bytes / beta`` each, with no overlap.

    Parameters
    ----------
    gpu, network : str
        Keys of the device database and of ``data/networks.toml`` (or a calibration file).
    gpus, sizes : sequences of int
        GPU counts and cube edges ``n``.
    fused : bool
        Model the emulation's reconstruction as fused (``gamma = 0``, the case where the
        serial projection finds the emulated FFT winning) or with its estimated cost.

    Returns
    -------
    list of dict
        Seconds (``native_compute_s``, ``emulated_compute_s``, ``exchange_s``,
        ``native_s``, ``emulated_s``), TFLOP/s per GPU (``5 N log2 N`` convention),
        ``speedup`` (native / emulated) and ``speedup_without_network``.
    """
    from fft import get_plan

    from .cluster import grid_shape
    from .fft_projection import project_fft
    from .network import load_network
    from .scenario import Scenario
    from .specs import get_device, load_devices

    dev, net = get_device(gpu, load_devices()), load_network(network)
    sc = Scenario(mode="fast", gamma=0.0) if fused else Scenario(mode="fast")
    rows = []
    for g in gpus:
        P, Q = grid_shape(int(g))
        for n in sizes:
            plan = get_plan(int(n))
            native = emulated = exchange = 0.0
            scheme = ""
            for st in fft3d_steps((n, n, n), P, Q):
                if isinstance(st, Exchange):
                    exchange += max(net.message_s(b, st.size - 1) for b in st.bytes)
                    continue
                proj = project_fft(plan_workload(plan, max(st.widths), counts=False), dev, sc)
                native += proj.native_s
                emulated += proj.emulated_s
                scheme = f"{proj.scheme} N={proj.moduli}"
            flops = fft3d_flops((n, n, n)) / g
            row = {"gpus": int(g), "grid": f"{P}x{Q}", "n": int(n), "gpu": dev.key,
                   "network": net.key, "substrate": scheme, "fused": fused,
                   "native_compute_s": native, "emulated_compute_s": emulated,
                   "exchange_s": exchange, "native_s": native + exchange,
                   "emulated_s": emulated + exchange}
            row["native_tflops_per_gpu"] = flops / row["native_s"] / 1e12
            row["emulated_tflops_per_gpu"] = flops / row["emulated_s"] / 1e12
            row["speedup"] = row["native_s"] / row["emulated_s"]
            row["speedup_without_network"] = native / emulated
            rows.append(row)
    return rows


def markdown(rows: list[dict]) -> str:
    """The rows of :func:`fft3d_cluster_rows` as a Markdown table (times in ms)."""
    out = ["| GPUs | grid | n | substrate | native compute ms | emulated compute ms | "
           "exchanges ms | native TF/GPU | emulated TF/GPU | speedup (without network) |",
           "|" + "---|" * 10]
    for r in rows:
        out.append(f"| {r['gpus']} | {r['grid']} | {r['n']} | {r['substrate']} | "
                   f"{1e3 * r['native_compute_s']:.2f} | {1e3 * r['emulated_compute_s']:.2f} | "
                   f"{1e3 * r['exchange_s']:.2f} | {r['native_tflops_per_gpu']:.2f} | "
                   f"{r['emulated_tflops_per_gpu']:.2f} | {r['speedup']:.2f} "
                   f"({r['speedup_without_network']:.2f}) |")
    return "\n".join(out)


def main(argv=None) -> int:
    """``python -m tme_model.fft_network``: the cluster rows, MODELLED."""
    import argparse
    import json

    from .cluster import positive_ints
    from .specs import TMEError

    p = argparse.ArgumentParser(prog="python -m tme_model.fft_network",
                                description="Modelled distributed 3-D FFT on a GPU cluster "
                                            "(TME device projection + alpha-beta exchanges).")
    p.add_argument("--gpu", default="b300")
    p.add_argument("--network", default="ndr")
    p.add_argument("--gpus", type=positive_ints, default=[4, 16, 64])
    p.add_argument("--n", type=positive_ints, default=[1024, 2048])
    p.add_argument("--unfused", action="store_true",
                   help="the reconstruction at its estimated cost (default: fused, gamma = 0)")
    p.add_argument("--format", choices=("markdown", "json"), default="markdown")
    a = p.parse_args(argv)
    try:
        rows = fft3d_cluster_rows(a.gpu, a.network, a.gpus, a.n, fused=not a.unfused)
    except TMEError as exc:
        p.error(str(exc))
    print(json.dumps(rows, indent=2) if a.format == "json" else
          "MODELLED (not measured)\n\n" + markdown(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
