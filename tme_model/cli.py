"""Command-line tools: ``tme-plot``, ``tme-table`` and ``tme-calibrate``.

Each ``*_main`` takes an argument list (``None``: ``sys.argv[1:]``) and returns the
exit status; usage errors exit with status 2 and a message on stderr.  Their ``--cpu``
is :mod:`tme_model.cli_cpu`; ``tme-calibrate`` is :mod:`tme_model.cli_calibrate`
(:func:`calibrate_main` is re-exported here, the entry point's name).
"""

from __future__ import annotations

import argparse
import csv
import io
import json
from typing import Sequence

from . import tables
from .cli_calibrate import calibrate_main
from .cli_common import figure_path, require_extra
from .cli_cpu import cpu_command
from .model import predict
from .profile_file import load_profile
from .scenario import PRESETS, Scenario
from .schemes import GRADES, MODES, SCHEMES
from .specs import Device, TMEError, get_device, load_cpus, load_devices
from .workloads import DEFAULT_KERNELS, Kernel, intensity_kernel

__all__ = ["calibrate_main", "plot_main", "table_main"]


def _gamma(text: str) -> float | None:
    if text.lower() == "auto":
        return None
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"gamma must be a number of seconds or 'auto', got {text!r}")


def _parser(prog: str, description: str, default_gpu: str | None = None) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=prog, description=description)
    dev = p.add_argument_group("devices")
    default = (f"default {default_gpu}, or device 'local' with --profile" if default_gpu
               else "required unless --profile")
    dev.add_argument("--gpu", action="append", metavar="KEY",
                     help=f"device key (repeatable: one panel or block each; {default}); "
                          "see --list-gpus")
    dev.add_argument("--list-gpus", action="store_true", help="list the known devices and exit")
    dev.add_argument("--cpu", action="append", metavar="KEY",
                     help="a CPU instead (repeatable: one panel or block each): native DGEMM, "
                          "the fp64 scheme on cpu-blas and the int8 scheme on cpu-onednn over "
                          "the GEMM order n, with their crossovers; '--cpu list' lists the CPUs")
    dev.add_argument("--specs", action="append", default=[], metavar="FILE",
                     help="TOML/JSON device file adding or overriding devices (repeatable)")
    dev.add_argument("--profile", metavar="FILE",
                     help="calibration profile (JSON), shown as device 'local'")
    mod = p.add_argument_group("model")
    mod.add_argument("--preset", choices=sorted(PRESETS),
                     help="the TME paper's configurations (alpha 10 or 37, FP8, its intensities)")
    mod.add_argument("--scheme", choices=("auto",) + SCHEMES,
                     help="low-precision substrate (default auto: the best on each device)")
    mod.add_argument("--moduli", type=int, help="number of moduli N (default: FP64 grade)")
    mod.add_argument("--mode", choices=MODES, help="scaling mode (default accurate)")
    mod.add_argument("--alpha", type=float, help="compute multiplier, given directly (>= 1)")
    mod.add_argument("--beta", type=float, help="memory-traffic multiplier (>= 1, default 1)")
    mod.add_argument("--gamma", type=_gamma, default=argparse.SUPPRESS, metavar="SECONDS|auto",
                     help="reconstruction seconds per output (default auto: estimated, or "
                          "from --profile; 0 in the presets)")
    mod.add_argument("--grade", choices=GRADES, help="accuracy for automatic moduli (default 2x-native)")
    ker = p.add_argument_group("kernels")
    ker.add_argument("--kernels", default=",".join(DEFAULT_KERNELS),
                     help="comma-separated kernels, e.g. dgemm,dgemm:4096,gemv-b8,spmv "
                          f"(default {','.join(DEFAULT_KERNELS)})")
    ker.add_argument("--intensity", type=float, action="append", default=[], metavar="I",
                     help="add a kernel given only by its intensity in FLOP/byte (repeatable)")
    return p


def _scenario(p: argparse.ArgumentParser, a: argparse.Namespace) -> Scenario:
    gamma_given = hasattr(a, "gamma")
    gamma = a.gamma if gamma_given else None
    try:
        if a.preset:
            clash = [f"--{n}" for n in ("scheme", "moduli", "mode", "alpha", "grade")
                     if getattr(a, n) is not None]
            if clash:
                p.error(f"--preset {a.preset} fixes the substrate; drop {', '.join(clash)}")
            sc = Scenario.preset(a.preset, beta=a.beta)
            return sc if not gamma_given else Scenario(**{**sc.__dict__, "gamma": gamma})
        return Scenario(scheme=a.scheme or "auto", moduli=a.moduli, mode=a.mode or "accurate",
                        alpha=a.alpha, beta=1.0 if a.beta is None else a.beta, gamma=gamma,
                        grade=a.grade or "2x-native")
    except ValueError as exc:
        p.error(str(exc))


def _devices(p: argparse.ArgumentParser, a: argparse.Namespace) -> dict[str, Device]:
    try:
        devices = load_devices(a.specs)
        if a.profile:
            dev = load_profile(a.profile).device()
            devices[dev.key] = dev
    except TMEError as exc:
        p.error(str(exc))
    return devices


def _kernels(p: argparse.ArgumentParser, a: argparse.Namespace, sc: Scenario) -> list[Kernel]:
    names = [n.strip() for n in a.kernels.split(",") if n.strip()]
    try:
        kernels = sc.kernels(names) + [intensity_kernel(i) for i in a.intensity]
    except ValueError as exc:
        p.error(str(exc))
    if not kernels:
        p.error("no kernels selected")
    return kernels


def _run(prog: str, description: str, argv: Sequence[str] | None, extra,
         default_gpu: str | None = None) -> tuple:
    p = _parser(prog, description, default_gpu)
    extra(p)
    a = p.parse_args(argv)
    if a.cpu:
        cpu_command(p, a, plot=prog == "tme-plot")
        return p, a, None, None
    devices = _devices(p, a)
    if a.list_gpus:
        print(tables.device_list(devices))
        return p, a, None, None
    sc = _scenario(p, a)
    kernels = _kernels(p, a, sc)
    gpus = a.gpu or ([load_profile(a.profile).name] if a.profile else None)
    gpus = gpus or ([default_gpu] if default_gpu else None)
    if not gpus:
        p.error("give at least one --gpu (see --list-gpus)")
    results = []
    try:
        for key in gpus:
            dev = get_device(key, devices)
            results.append((dev, [predict(k, dev, sc.emulation(dev, k)) for k in kernels]))
    except (TMEError, ValueError) as exc:
        cpus = [k for k in gpus if k.lower() in load_cpus(a.specs)]
        p.error(f"{exc} ({cpus[0]!r} is a CPU: use --cpu {cpus[0]})" if cpus else str(exc))
    return p, a, sc, results


def plot_main(argv: Sequence[str] | None = None) -> int:
    """``tme-plot``: draw TME rooflines, one panel per ``--gpu``.

    Parameters
    ----------
    argv : sequence of str, optional
        Arguments (default ``sys.argv[1:]``).

    Returns
    -------
    int
        Exit status (0).
    """
    def extra(p):
        p.add_argument("-o", "--output", metavar="FILE",
                       help="output file, .png/.svg/.pdf (default tme-<gpu>.png in the cwd)")
        p.add_argument("--dpi", type=int, default=110, help="resolution of raster output")

    p, a, sc, results = _run("tme-plot", "Roofline of native vs emulated FP64 (TME model).",
                             argv, extra)
    if results is None:
        return 0
    out = figure_path(p, a.output, "tme-", (d.key for d, _ in results))
    require_extra(p, "matplotlib")
    from .plot import roofline_figure, save_figure

    save_figure(roofline_figure(results, sc.describe()), str(out), dpi=a.dpi)
    print(f"tme-plot: wrote {out.resolve()}")
    return 0


#: ``tme-table`` without ``--gpu`` (nor ``--profile``): the FP64-starved flagship the
#: docs' examples use.
DEFAULT_TABLE_GPU = "b300"
#: Columns of the default text table, (header, row key, format): under 100 characters
#: wide; ``--wide`` prints every column (:func:`tme_model.tables.prediction_table`).
_COMPACT = (("kernel", "kernel", "{}"), ("I", "intensity", "{:.4g}"),
            ("emulation", None, None), ("native [s]", "native_s", "{:.3g}"),
            ("emul [s]", "emulated_s", "{:.3g}"), ("speedup", "speedup", "{:.3g}"),
            ("bound", None, None), ("crossover I", "crossover_intensity", "{:.4g}"))
_WIDTH = 100


def _compact_cell(row: dict, key: str | None, fmt: str | None, head: str) -> str:
    if head == "emulation":
        n = "" if row["moduli"] is None else f" N={row['moduli']}"
        return f"{row['scheme']}{n} a={row['alpha']:.4g}"
    if head == "bound":
        limiter = {"reconstruction": "recon"}.get(row["emulated_limiter"], row["emulated_limiter"])
        return f"{row['regime'].split('/')[0]}/{limiter}"
    if key == "crossover_intensity":
        kind = row["crossover_kind"]
        if kind == "never":
            return "never"
        tail = (" (tie)" if kind == "tie" else
                " (tie below)" if row["crossover_ties_below"] else "")
        return fmt.format(row[key]) + tail
    return fmt.format(row[key])


def _compact_table(rows: list[dict]) -> str:
    """The default text table: one block per device, right-aligned, under 100 columns."""
    out = []
    head = [h for h, _, _ in _COMPACT]
    for gpu in dict.fromkeys(r["gpu"] for r in rows):
        body = [[_compact_cell(r, k, f, h) for h, k, f in _COMPACT]
                for r in rows if r["gpu"] == gpu]
        widths = [max(len(x) for x in col) for col in zip(head, *body)]
        out.append(f"== {gpu}")
        out += ["  ".join(c.rjust(w) for c, w in zip(line, widths)) for line in [head] + body]
        out.append("")
    return "\n".join(out)


def _legend(compact: bool) -> str:
    """What the text table's columns mean (wrapped to 100 columns)."""
    import textwrap

    parts = ["I: arithmetic intensity, FLOP/byte."]
    if compact:
        parts.append("emulation: substrate, moduli N and a = alpha (low-precision products "
                     "per FP64 product).")
    parts += ["native, emul [s]: seconds for one call of the kernel at the size listed below "
              "(native FP64, emulated FP64).",
              "speedup: native / emulated time (> 1: emulation faster)."]
    if compact:
        parts.append("bound: what limits the native / emulated time (compute, memory, "
                     "recon = reconstruction).")
    parts.append("crossover I: the intensity above which emulation wins for the kernel's shape "
                 "(never: at none).")
    if compact:
        parts.append("--wide: every column; --format json: every field.")
    return textwrap.fill(" ".join(parts), _WIDTH)


def _kernel_sizes(kernels: list[Kernel], markdown: bool) -> str:
    """The size each kernel's times are for: its description, W and Q."""
    import textwrap

    rescaled = [k.intensity_source for k in kernels
                if k.intensity_source not in ("first principles", "given")]
    head = "Times are for one call of each kernel at (W: FP64 flops, Q: bytes moved"
    if rescaled:
        head += f"; W from the intensities of {', '.join(dict.fromkeys(rescaled))}"
    head += "):"
    if markdown:
        return "\n".join([head, ""] + [f"- {k.name}: {k.description} (W = {k.flops:.3g}, "
                                       f"Q = {k.bytes:.3g})" for k in kernels])
    w = max(len(k.name) for k in kernels)
    cells = [(f"W {k.flops:.3g}", f"Q {k.bytes:.3g}") for k in kernels]
    ww, wq = (max(len(c[i]) for c in cells) for i in (0, 1))
    out = [textwrap.fill(head, _WIDTH)]
    for k, (cw, cq) in zip(kernels, cells):
        lead = f"  {k.name:<{w}}  {cw:<{ww}}  {cq:<{wq}}  "
        out.append(textwrap.fill(k.description, _WIDTH, initial_indent=lead,
                                 subsequent_indent=" " * len(lead)))
    return "\n".join(out)


def table_main(argv: Sequence[str] | None = None) -> int:
    """``tme-table``: one row per kernel with the TME model's predictions.

    Without ``--gpu`` (nor ``--profile``) the device is :data:`DEFAULT_TABLE_GPU`. The
    default text table fits 100 columns (``--wide``: every column), with a legend of the
    columns and the size each kernel's times are for below it.

    Parameters
    ----------
    argv : sequence of str, optional
        Arguments (default ``sys.argv[1:]``).

    Returns
    -------
    int
        Exit status (0).
    """
    def extra(p):
        out = p.add_argument_group("output")
        out.add_argument("--format", choices=("text", "markdown", "json", "csv"), default="text",
                         help="text (default): an aligned table under 100 columns, with a "
                              "legend; markdown: a Markdown table of every column; json: a list "
                              "of objects with every field; csv: the same fields as CSV")
        out.add_argument("--wide", action="store_true",
                         help="text: every column (about 170 characters wide)")
        out.add_argument("--baseline", metavar="KEY",
                         help="add columns relative to this device's native FP64 (e.g. "
                              "paper:h100; text: implies --wide)")

    p, a, sc, results = _run("tme-table", "Native vs emulated FP64 per kernel (TME model).",
                             argv, extra, default_gpu=DEFAULT_TABLE_GPU)
    if results is None:
        return 0
    baseline = None
    if a.baseline:
        try:
            baseline = get_device(a.baseline, _devices(p, a))
        except TMEError as exc:
            p.error(str(exc))
    kernels = _kernels(p, a, sc)
    try:
        rows = tables.prediction_rows(results, kernels, baseline)
    except TMEError as exc:
        p.error(str(exc))
    if a.format == "json":
        print(json.dumps(rows, indent=2))
    elif a.format == "csv":
        buf = io.StringIO()
        writer = csv.DictWriter(buf, fieldnames=list(rows[0]), lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
        print(buf.getvalue(), end="")
    else:
        markdown = a.format == "markdown"
        compact = not (markdown or a.wide or baseline)
        print(f"TME model: {sc.describe()}\n")
        if compact:
            print(_compact_table(rows))
        else:
            print(tables.prediction_table(rows, markdown, baseline.key if baseline else None))
        if not markdown:
            print(_legend(compact))
            print()
        print(_kernel_sizes(kernels, markdown))
    return 0
