"""Measure and write the generated parts of ``docs/hpl.rst`` (``docs/_generated/hpl/``).

Usage (from the repository root)::

    OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 NUMBA_NUM_THREADS=1 \
        .venv/bin/python docs/_scripts/hpl_page.py [--sizes 512,1024,1536,2048] [--nb 256]
                                                   [--seeds 0,1,2] [--repeat 2] [--from-json]

(one thread for both libraries: on the shared 2-core machine two BLAS threads wait on
each other whenever another process holds a core, and scipy's times then scatter by 10x)

Runs :func:`benchmarks.hpl.run` (``ozaki-full``, ``ozaki-refine`` where ozaki has it,
``scipy``; every order and seed, each solver timed ``--repeat`` times in rotation, the
fastest kept) and writes, under
``docs/_generated/hpl/``:

* ``hpl_bench.json``: every run and the summary (the benchmark's ``--json``);
* ``hpl_bench.rst``: the summary table (medians over seeds);
* ``hpl_output.txt``: the benchmark's HPL lines for the largest order, first seed;
* ``hpl_time_vs_n.png``: time against n, and the ratio to scipy;
* ``lu_projection.rst``: the TME projection of the same LU on B300 and H100
  (:func:`tme_model.lu_projection.lu_projection_rst`; modelled, not measured).

``--from-json`` rewrites the table, the lines and the figure from the stored JSON and
the projection from the model, without measuring. About a minute on 2 cores at the
default sizes.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from benchmarks import hpl  # noqa: E402

OUT = ROOT / "docs" / "_generated" / "hpl"
LABELS = {"ozaki-full": ("ozaki.linalg, full count", "o-", "tab:blue"),
          "ozaki-refine": ("ozaki.linalg.solve_refined", "s-", "tab:orange"),
          "scipy": ("scipy.linalg (LAPACK)", "^-", "tab:green")}


def _ints(text: str) -> list[int]:
    return [int(v) for v in text.split(",") if v.strip()]


def table(data: dict) -> str:
    """The summary as a reStructuredText table (medians over seeds)."""
    from tme_model.tables import rst_table

    head = ["n", "solver", "seeds", "time [s]", "GFLOP/s", "residual (median)",
            "residual (max)", "passed", "time / scipy's", "in emulated products"]
    rows = []
    for r in data["summary"]:
        ratio, share = r.get("median_ratio_to_scipy"), hpl.emulated_cell(r)
        rows.append([str(r["n"]), r["method"], str(r["runs"]), f"{r['median_s']:.3g}",
                     f"{r['median_gflops']:.3g}", f"{r['median_residual']:.3g}",
                     f"{r['max_residual']:.3g}", f"{r['passed']}/{r['runs']}",
                     "" if ratio is None else f"{ratio:.3g}",
                     share])
    note = "".join(f"\n\n{s}" for s in data["skipped"])
    return rst_table(head, rows) + note + "\n"


def lines(data: dict) -> str:
    """The HPL lines of the largest order's first seed, as the benchmark prints them."""
    n, seed = max(data["parameters"]["sizes"]), data["parameters"]["seeds"][0]
    out = []
    for r in data["runs"]:
        if r["n"] == n and r["seed"] == seed:
            out += [hpl.HEADER, hpl.THIN, *hpl.hpl_lines(r),
                    f"  {r['method']}: {hpl.note_line(r)}", hpl.RULE]
    return "\n".join(out) + "\n"


def figure(data: dict, path: Path) -> None:
    """Time against n (every seed as a dot, the median as a line) and the ratio to scipy."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax, bx) = plt.subplots(1, 2, figsize=(10, 4.2))
    summary = data["summary"]
    for method, (label, style, color) in LABELS.items():
        rows = [r for r in summary if r["method"] == method]
        if not rows:
            continue
        ns = [r["n"] for r in rows]
        ax.loglog(ns, [r["median_s"] for r in rows], style, color=color, label=label)
        runs = [r for r in data["runs"] if r["method"] == method]
        ax.loglog([r["n"] for r in runs], [r["seconds"] for r in runs], ".", color=color,
                  alpha=0.4)
        if method != "scipy":
            bx.semilogx(ns, [r["median_ratio_to_scipy"] for r in rows], style, color=color,
                        label=label)
    for a in (ax, bx):
        a.set_xscale("log", base=2)
        a.set_xlabel("n")
        a.grid(alpha=0.3, which="both")
    ax.set_ylabel("time of factor + solve [s]")
    ax.set_title("HPL problem, wall time (dots: each seed)", fontsize=10)
    bx.set_ylabel("time / scipy's time (same matrix, same run)")
    bx.set_ylim(bottom=0)
    bx.set_title("ratio to scipy.linalg (median over seeds)", fontsize=10)
    ax.legend(fontsize=8)
    m = data["machine"]
    blas = [b["num_threads"] for b in m["blas"] if b["user_api"] == "blas"][:1]
    threads = (f"BLAS threads {blas[0]}, ozaki pass threads {m.get('pass_threads')}; "
               if blas else "")
    fig.suptitle(f"{m['cpu']}, {m['cores']} cores, {m['summary']}; {threads}nb = "
                 f"{data['parameters']['nb']}; shared machine, indicative", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", type=_ints, default=[512, 1024, 1536, 2048])
    p.add_argument("--nb", type=int, default=256)
    p.add_argument("--seeds", type=_ints, default=[0, 1, 2])
    p.add_argument("--repeat", type=int, default=2,
                   help="calls per solver and problem, the fastest kept (default 2)")
    p.add_argument("--from-json", action="store_true", help="redraw from the stored run")
    a = p.parse_args(argv)
    OUT.mkdir(parents=True, exist_ok=True)
    store = OUT / "hpl_bench.json"
    if a.from_json:
        data = json.loads(store.read_text())
    else:
        with contextlib.redirect_stdout(io.StringIO()):
            data = hpl.run(a.sizes, a.nb, a.seeds, {}, repeat=a.repeat)
        store.write_text(json.dumps(data, indent=1) + "\n")
    (OUT / "hpl_bench.rst").write_text(table(data))
    (OUT / "hpl_output.txt").write_text(lines(data))
    figure(data, OUT / "hpl_time_vs_n.png")
    from tme_model.lu_projection import lu_projection_rst
    (OUT / "lu_projection.rst").write_text(lu_projection_rst() + "\n")
    print("\n".join(hpl.summary_lines(data)))
    print(f"wrote {', '.join(sorted(f.name for f in OUT.iterdir()))} in {OUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
