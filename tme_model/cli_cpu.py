"""``tme-plot --cpu`` and ``tme-table --cpu``: the CPU model (:mod:`tme_model.cpus`) on
the command line.

:func:`tme_model.cli.plot_main` and :func:`tme_model.cli.table_main` hand their parsed
arguments here when ``--cpu`` is given (:doc:`tme_model`, "CPUs").
"""

from __future__ import annotations

import argparse
import json

from . import tables
from .cli_common import figure_path, require_extra
from .specs import TMEError, get_device, load_cpus
from .workloads import DEFAULT_KERNELS

__all__ = ["NOT_FOR_CPU", "cpu_command"]

#: Options of the GPU model that do not apply to ``--cpu`` (its paths fix scheme, moduli
#: and kernel), by their ``argparse`` destination, with their defaults.
NOT_FOR_CPU: dict[str, object] = {
    "gpu": None, "list_gpus": False, "profile": None, "preset": None, "scheme": None,
    "moduli": None, "alpha": None, "beta": None, "grade": None, "intensity": [],
    "kernels": ",".join(DEFAULT_KERNELS), "baseline": None, "wide": False}


def cpu_command(parser: argparse.ArgumentParser, args: argparse.Namespace, plot: bool) -> None:
    """``--cpu``: print the CPU table of each key (``list``: the CPUs), and draw the
    figure for ``tme-plot``.

    Parameters
    ----------
    parser : argparse.ArgumentParser
        The tool's parser: usage errors (an option of :data:`NOT_FOR_CPU` given, an
        unknown CPU, a format other than text or json) exit through it with status 2.
    args : argparse.Namespace
        Its parsed arguments (``cpu``, ``specs``, ``mode``, ``gamma``; ``format`` of
        ``tme-table``; ``output`` and ``dpi`` of ``tme-plot``).
    plot : bool
        Also write the figure (:func:`tme_model.cpus.cpu_figure`).
    """
    clash = [f"--{k.replace('_', '-')}" for k, v in NOT_FOR_CPU.items()
             if hasattr(args, k) and getattr(args, k) != v]
    if clash:
        parser.error(f"--cpu models its own paths; drop {', '.join(clash)}")
    try:
        cpus = load_cpus(args.specs)
    except TMEError as exc:
        parser.error(str(exc))
    if [k.lower() for k in args.cpu] == ["list"]:
        print(tables.cpu_list(cpus))
        return
    try:
        chosen = [get_device(k, cpus) for k in args.cpu]
    except TMEError as exc:
        parser.error(str(exc).replace("unknown device", "unknown CPU") + " (or --cpu list)")
    mode, gamma = args.mode or "accurate", getattr(args, "gamma", None)
    if getattr(args, "format", "text") == "json":
        print(json.dumps([r for d in chosen for r in tables.cpu_rows(d, mode, gamma)], indent=2))
    elif getattr(args, "format", "text") != "text":
        parser.error("--cpu prints text or json")
    else:
        print("\n\n".join(tables.cpu_table(d, mode, gamma) for d in chosen))
    if plot:
        out = figure_path(parser, args.output, "tme-cpu-", (d.key for d in chosen))
        require_extra(parser, "matplotlib")
        from .cpus import cpu_figure
        from .plot import save_figure

        save_figure(cpu_figure(chosen, mode, gamma), str(out), dpi=args.dpi)
        print(f"tme-plot: wrote {out.resolve()}")
