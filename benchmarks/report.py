"""Benchmark report: ``ozaki.dgemm`` against numpy's DGEMM, as a Markdown table.

Usage::

    python benchmarks/report.py [--sizes 1024,2048,4096] [--repeat 3] [--out FILE.md]
                                [--json FILE.json] [--mem-n N | --no-memory]

For each size it builds the seeded inputs ``a_ij = (U - 0.5) exp(Z)``, makes one
untimed warm-up call of every configuration (kernels compiled, workspace
resident), then runs ``--repeat`` rounds; in each round every configuration is
timed once, right after one timing of numpy's ``A @ B`` on the same inputs
(interleaved, so the baseline sees the same machine state). Reported: medians
over rounds; the ratio is the configuration's median over numpy's median at
that size, the paired ratio the median over rounds of each call's time over the
numpy time measured just before it (robust to drifts in the machine's load). The shares come from ``info.seconds``: "GEMM share" is the
modular GEMMs (phase ``products``) plus, in accurate mode, the bound GEMM,
estimated as one numpy DGEMM of the same shape (capped by the ``scaling``
phase that contains it). The phase split is scaling / residues / products /
reconstruction / other (argument checks, output allocation), in percent of the
wall time.

Peak memory: fp64 scheme, 6 moduli, fast and accurate, at ``--mem-n``
(default: the largest size), each in a fresh subprocess from the kernel's
resident-set high-water mark (see ``bench_common.peak_memory``), in units of
``n**2`` doubles.

Progress goes to stderr (tqdm); the table to stdout and to ``--out``.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_common as bc  # noqa: E402

import ozaki  # noqa: E402


def _git_state() -> str:
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    try:
        head = subprocess.run(["git", "-C", root, "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", root, "status", "--porcelain", "--", "ozaki"],
                               capture_output=True, text=True, check=True).stdout.strip()
        return head + (" (ozaki/ modified)" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def _fmt_s(x: float) -> str:
    return f"{x:.3f}" if x < 10 else f"{x:.2f}"


def run(sizes, repeat, mem_n, progress=True, configs=None) -> dict:
    import numpy as np
    from tqdm import tqdm

    import ozaki

    configs = bc.CONFIGS if configs is None else configs
    kept = list(configs)
    steps = len(sizes) * len(kept) * (repeat + 1)
    steps += 3 if mem_n else 0
    bar = tqdm(total=steps, desc="benchmark", unit="call", file=sys.stderr,
               disable=not progress, dynamic_ncols=True)

    bc.warm_up_compilation(configs)
    git = _git_state()
    # Memory first: the probes are fresh interpreters that import ozaki anew,
    # so they run closest to the code imported here.
    memory = []
    if mem_n:
        for what, mode in (("numpy", "fast"), ("ozaki", "fast"), ("ozaki", "accurate")):
            bar.set_postfix_str(f"memory n={mem_n} {what} {mode}")
            memory.append(bc.peak_memory(mem_n, scheme="fp64", num_moduli=6, mode=mode,
                                         what=what))
            bar.update()
    load_before = os.getloadavg()
    rows = []
    numpy_by_n = {}
    for n in sizes:
        A, B = bc.make_inputs(n)
        A @ B
        for cfg in kept:  # warm-up: workspace resident, nothing timed
            bar.set_postfix_str(f"n={n} warm-up {cfg.label}")
            bc.run_config(cfg, A, B)
            bar.update()
        numpy_t = []
        walls = {c: [] for c in kept}
        infos = {c: [] for c in kept}
        paired = {c: [] for c in kept}
        for r in range(repeat):
            for cfg in kept:
                bar.set_postfix_str(f"n={n} round {r + 1}/{repeat} {cfg.label}")
                tn = bc.time_numpy(A, B)
                w, info = bc.run_config(cfg, A, B)
                numpy_t.append(tn)
                walls[cfg].append(w)
                infos[cfg].append(info)
                paired[cfg].append(w / tn)
                bar.update()
        numpy_med = statistics.median(numpy_t)
        numpy_by_n[n] = {"median_s": numpy_med, "min_s": min(numpy_t), "samples": numpy_t}
        for cfg in kept:
            s = bc.summarize(walls[cfg], infos[cfg], numpy_med)
            counts = sorted({i.num_moduli for i in infos[cfg]})
            s.update(n=n, label=cfg.label, num_moduli_arg=cfg.num_moduli,
                     auto=cfg.num_moduli == "auto", counts=counts,
                     paired_ratio_median=statistics.median(paired[cfg]),
                     walls=walls[cfg],
                     workspace_n2_doubles=s["workspace_bytes"] / (8 * n * n))
            rows.append(s)
        del A, B
    load_after = os.getloadavg()

    bar.close()

    import numba
    return {
        "date": datetime.datetime.now().isoformat(timespec="seconds"),
        "machine": {"cpu": bc.cpu_model(), "cores": os.cpu_count(),
                    "python": platform.python_version(), "numpy": np.__version__,
                    "numba": numba.__version__,
                    "pass_threads": ozaki.get_workers(),
                    "blas": bc.blas_info(),
                    "env": {k: os.environ.get(k) for k in
                            ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE",
                             "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS",
                             "NUMBA_NUM_THREADS")},
                    "loadavg_before": load_before, "loadavg_after": load_after},
        "ozaki": {"version": ozaki.__version__, "git": git},
        "sizes": list(sizes), "repeat": repeat,
        "numpy": numpy_by_n, "rows": rows, "memory": memory,
    }


def _moduli(r: dict) -> str:
    counts = "/".join(map(str, r.get("counts") or [r["num_moduli"]]))
    return f"auto: {counts}" if r["auto"] else counts


def _certificate_notes(result: dict) -> list[str]:
    """One line per row whose certificate failed somewhere or that fell back."""
    notes = []
    for r in result["rows"]:
        if r.get("uncertified") or r.get("fallback", "none") != "none":
            notes.append(f"n = {r['n']}, {r['label']}: {r.get('uncertified')} entries "
                         f"uncertified ({r.get('bound_kind')} bound, worst ratio "
                         f"{r.get('max_bound_ratio', float('nan')):.3g}), fallback "
                         f"{r.get('fallback')} on {r.get('fallback_entries')} entries")
    return notes


def markdown(result: dict) -> str:
    m = result["machine"]
    blas = "; ".join(
        f"{b['owner']}'s {b['internal_api']} {b['version']} ({b['architecture']} kernel, "
        f"{b['num_threads']} threads)" if b["user_api"] == "blas" else
        f"{b['internal_api']} {b['library']} ({b['num_threads']} threads)"
        for b in m["blas"])
    out = [f"# ozaki.dgemm against numpy DGEMM ({result['date']})", "",
           f"- CPU: {m['cpu']}, {m['cores']} cores; numpy {m['numpy']} with {blas}; "
           f"numba {m['numba']} ({m.get('pass_threads', '?')} pass threads)",
           f"- ozaki {result['ozaki']['version']}, git {result['ozaki']['git']}",
           f"- inputs a_ij = (U - 0.5) exp(Z), m = n = k; median of {result['repeat']} "
           f"rounds after one warm-up call; numpy timed interleaved in the same run",
           f"- load average before / after: "
           f"{', '.join(f'{x:.2f}' for x in m['loadavg_before'])} / "
           f"{', '.join(f'{x:.2f}' for x in m['loadavg_after'])}", ""]
    out.append("| n | scheme | moduli | mode | GEMMs | time (s) | numpy (s) | ratio | "
               "paired ratio | GEMM share | scal / res / prod / rec / other (%) |")
    out.append("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in result["rows"]:
        mod = _moduli(r)
        split = " / ".join(f"{100 * r[f'seconds_{p}'] / r['median_s']:.0f}"
                           for p in (*bc.PHASES, "other"))
        out.append(f"| {r['n']} | {r['scheme']} | {mod} | {r['mode']} | {r['gemms']} | "
                   f"{_fmt_s(r['median_s'])} | {_fmt_s(r['numpy_median_s'])} | "
                   f"{r['ratio_to_numpy']:.2f} | {r['paired_ratio_median']:.2f} | "
                   f"{100 * r['share_gemms']:.1f}% | {split} |")
    notes = _certificate_notes(result)
    if notes:
        out += ["", "Certificate (ozaki's accuracy contract):", ""] + [f"- {x}" for x in notes]
    if result["memory"]:
        mem = {(x["what"], x["mode"]): x for x in result["memory"]}
        n = result["memory"][0]["n"]
        ref = mem[("numpy", "fast")]
        out += ["", f"Peak extra memory at n = {n}, fp64 scheme, 6 moduli, in n^2 doubles "
                f"({n}^2 doubles = {n * n * 8 / 2**20:.0f} MiB). Method: {ref['method']}.", "",
                "| product | first call | repeated call | resident after | "
                "first call beyond numpy's A @ B |",
                "|---|---|---|---|---|"]
        for key, name in ((("numpy", "fast"), "numpy A @ B"),
                          (("ozaki", "fast"), "ozaki fast"),
                          (("ozaki", "accurate"), "ozaki accurate")):
            x = mem[key]
            out.append(f"| {name} | {x['first_n2']:.2f} | {x['second_n2']:.2f} | "
                       f"{x['retained_n2']:.2f} | {x['first_n2'] - ref['first_n2']:.2f} |")
        out += ["", "First call: the grow-only workspace is allocated in it; repeated "
                "call: the workspace is already resident; resident after: kept "
                "between calls (workspace and result). All include the result."]
    return "\n".join(out) + "\n"


def rst_tables(result: dict) -> str:
    """The timing and memory tables as reStructuredText ``list-table`` blocks."""
    def table(title, header, rows, widths):
        lines = [f".. list-table:: {title}", "   :header-rows: 1",
                 f"   :widths: {' '.join(map(str, widths))}", ""]
        for row in [header] + rows:
            lines.append(f"   * - {row[0]}")
            lines += [f"     - {c}" for c in row[1:]]
        return "\n".join(lines) + "\n"

    rows = []
    for r in result["rows"]:
        split = " / ".join(f"{100 * r[f'seconds_{p}'] / r['median_s']:.0f}"
                           for p in (*bc.PHASES, "other"))
        rows.append([str(r["n"]), r["scheme"],
                     _moduli(r),
                     r["mode"], str(r["gemms"]), _fmt_s(r["median_s"]),
                     _fmt_s(r["numpy_median_s"]), f"{r['ratio_to_numpy']:.2f}",
                     f"{r['paired_ratio_median']:.2f}",
                     f"{100 * r['share_gemms']:.1f}", split])
    out = table("Median wall time against numpy ``A @ B`` (same run, interleaved)",
                ["n", "scheme", "moduli", "mode", "GEMMs", "time (s)", "numpy (s)",
                 "ratio", "paired ratio", "GEMM share (%)",
                 "scal / res / prod / rec / other (%)"],
                rows, [6, 6, 8, 8, 6, 8, 8, 6, 6, 8, 16])
    if result["memory"]:
        mem = {(x["what"], x["mode"]): x for x in result["memory"]}
        n = result["memory"][0]["n"]
        ref = mem[("numpy", "fast")]
        mrows = []
        for key, name in ((("numpy", "fast"), "numpy ``A @ B``"),
                          (("ozaki", "fast"), "fp64, 6 moduli, fast"),
                          (("ozaki", "accurate"), "fp64, 6 moduli, accurate")):
            x = mem[key]
            mrows.append([name, f"{x['first_n2']:.2f}", f"{x['second_n2']:.2f}",
                          f"{x['retained_n2']:.2f}", f"{x['first_n2'] - ref['first_n2']:.2f}"])
        out += "\n" + table(f"Peak extra resident memory at n = {n}, in n\\ :sup:`2` doubles",
                            ["product", "first call", "repeated call", "resident after",
                             "first call beyond numpy's"], mrows, [20, 10, 10, 10, 12])
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default=",".join(map(str, bc.sizes_from_env())),
                    help="comma-separated n (default: OZAKI_BENCH_SIZES or 1024,2048,4096)")
    ap.add_argument("--repeat", type=int, default=3, help="timed rounds (at least 3)")
    ap.add_argument("--out", help="also write the Markdown table here")
    ap.add_argument("--json", help="write every measurement here (JSON)")
    ap.add_argument("--rst", help="also write the tables as reStructuredText here")
    ap.add_argument("--from-json", metavar="FILE",
                    help="measure nothing: format the results saved by --json FILE")
    ap.add_argument("--mem-n", type=int, default=None,
                    help="n of the peak-memory probe (default: the largest size)")
    ap.add_argument("--no-memory", action="store_true", help="skip the memory probe")
    ap.add_argument("--configs", default=None,
                    help="only these configurations, comma-separated labels "
                         "(e.g. fp64-6-fast,fp64-6-accurate; all: "
                         + ",".join(c.label for c in bc.CONFIGS) + ")")
    ap.add_argument("--no-progress", action="store_true", help="no progress bar")
    args = ap.parse_args(argv)
    if args.from_json:
        with open(args.from_json) as fh:
            result = json.load(fh)
    else:
        sizes = bc.parse_sizes(args.sizes)
        if args.repeat < 3:
            ap.error("--repeat must be at least 3 (medians of at least 3 rounds)")
        mem_n = None if args.no_memory else (args.mem_n or max(sizes))
        configs = None
        if args.configs:
            by_label = {c.label: c for c in bc.CONFIGS}
            unknown = [x for x in args.configs.split(",") if x not in by_label]
            if unknown:
                ap.error(f"unknown configurations {unknown}; known: {sorted(by_label)}")
            configs = tuple(by_label[x] for x in args.configs.split(","))
        result = run(sizes, args.repeat, mem_n, progress=not args.no_progress,
                     configs=configs)
    text = markdown(result)
    sys.stdout.write(text)
    if args.out:
        with open(args.out, "w") as fh:
            fh.write(text)
    if args.rst:
        with open(args.rst, "w") as fh:
            fh.write(rst_tables(result))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(result, fh, indent=1, default=str)
    return 0


if __name__ == "__main__":
    sys.exit(main())
