"""What a user meets first: the TME figure and table explain themselves, and the MPI
benchmarks print their help and results once, legibly."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tme_model.cli import DEFAULT_TABLE_GPU, table_main
from tme_model.model import predict
from tme_model.scenario import Scenario
from tme_model.specs import get_device, load_devices

ROOT = Path(__file__).resolve().parents[1]


def run(main, argv, capsys):
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def _help(main, capsys) -> str:
    with pytest.raises(SystemExit) as exc:
        main(["--help"])
    assert exc.value.code == 0
    return capsys.readouterr().out


# ------------------------------------------------------------------- tme-plot

def _figure(gpu: str, scenario: Scenario):
    pytest.importorskip("matplotlib")
    from tme_model.plot import roofline_figure

    dev = get_device(gpu, load_devices())
    preds = [predict(k, dev, scenario.emulation(dev, k)) for k in scenario.kernels()]
    return roofline_figure([(dev, preds)], scenario.describe()), preds


def _close(fig):
    import matplotlib.pyplot as plt

    plt.close(fig)


@pytest.mark.slow
def test_plot_legend_names_each_ceiling_in_words():
    fig, preds = _figure("b300", Scenario())
    try:
        (ax,) = fig.axes
        legend = [t.get_text() for t in ax.get_legend().get_texts()]
        ceilings = [t for t in legend if t.startswith("emulated FP64 ceiling")]
        # the B300 uses FP8 with 14 moduli for the GEMM-like kernels, 13 for the others
        assert len(ceilings) == 2
        assert any("FP8, 14 moduli, accurate mode, alpha=43" in t and "dgemm" in t
                   for t in ceilings)
        assert any("FP8, 13 moduli, accurate mode, alpha=40" in t and "spmv" in t
                   for t in ceilings)
        assert "native FP64: 1.25 TFLOP/s" in legend
        assert any(t.startswith("kernel, emulated FP64") and "speedup" in t for t in legend)
        title = ax.get_title()
        assert "N=14/13" not in title and "alpha=43/40" not in title  # the cryptic subtitle
        assert "FP8" in title and "13-14 moduli" in title and "accurate mode" in title
    finally:
        _close(fig)


def test_plot_separates_the_two_nearly_equal_ceilings():
    fig, _ = _figure("b300", Scenario())
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg

        (ax,) = fig.axes
        renderer = FigureCanvasAgg(fig).get_renderer()
        labels = [t for t in ax.texts if t.get_text().startswith("emulated ceiling")]
        assert len(labels) == 2
        (hi, lo) = labels  # the higher ceiling (13 moduli, alpha 40) first
        assert "13 moduli" in hi.get_text() and "14 moduli" in lo.get_text()
        bh, bl = (t.get_window_extent(renderer) for t in (hi, lo))
        assert not bh.overlaps(bl)
        # the higher ceiling's label above its line, the lower one's below its own
        y = lambda t: ax.transData.transform(t.xy)[1]  # noqa: E731
        assert bh.y0 > y(hi) and bl.y1 < y(lo)
    finally:
        _close(fig)


def _caption(fig) -> str:
    return " ".join(t.get_text() for t in fig.texts).replace("\n", " ")


def test_plot_crossover_line_is_consistent_with_the_kernels():
    """With gamma > 0 the line drawn (beta P64 / Bmem) is the crossover of free
    reconstruction: it is labelled so, and every kernel right of it that is still
    slower is named in the caption as one that never wins."""
    fig, preds = _figure("b300", Scenario())
    try:
        (ax,) = fig.axes
        assert all(p.gamma > 0 for p in preds)
        legend = [t.get_text() for t in ax.get_legend().get_texts()]
        assert "crossover if reconstruction were free (gamma=0)" in legend
        line = [t.get_text() for t in ax.texts if t.get_text().startswith("crossover I=")]
        assert line == ["crossover I=0.156 at gamma=0 (free reconstruction)"]
        xo = 0.156
        caption = _caption(fig)
        never = caption.split("never win")[0].rsplit(";", 1)[-1]
        slow_right = [p.kernel for p in preds if p.intensity > xo and p.speedup < 1]
        assert slow_right == ["stencil7", "spmv", "fft3d"]
        assert all(k in never for k in slow_right)
        assert "dgemm, gemv-b8, gemv-b2 win right of I=0.157" in caption
        assert "if reconstruction were free" in caption
    finally:
        _close(fig)


def test_plot_crossover_without_reconstruction_says_where_emulation_wins():
    fig, preds = _figure("paper:b300", Scenario.preset("paper-v3"))
    try:
        (ax,) = fig.axes
        legend = [t.get_text() for t in ax.get_legend().get_texts()]
        assert "crossover: emulation faster right of it" in legend
        line = [t.get_text() for t in ax.texts if t.get_text().startswith("crossover I=")]
        assert line == ["crossover I=0.163: emulation faster to the right"]
        # consistent: every kernel right of the line is a speedup
        assert all(p.speedup > 1 for p in preds if p.intensity > 0.163)
        assert "right of it emulation beats native FP64" in _caption(fig)
    finally:
        _close(fig)


def test_plot_says_when_emulation_never_wins():
    sc = Scenario(scheme="fp8", moduli=12, gamma=0.0)
    fig, preds = _figure("h100", sc)
    try:
        caption = _caption(fig)
        assert "never beats native FP64 (matrix)" in caption
        assert "dgemm" in caption.split("never win")[0]
    finally:
        _close(fig)


# ------------------------------------------------------------------ tme-table

def test_table_defaults_to_a_gpu(capsys):
    code, out, _ = run(table_main, [], capsys)
    assert code == 0 and f"== {DEFAULT_TABLE_GPU}" in out
    assert f"default {DEFAULT_TABLE_GPU}" in _help(table_main, capsys)


@pytest.mark.parametrize("args", [[], ["--gpu", "b300", "--gpu", "h100"],
                                  ["--gpu", "paper:b300", "--preset", "paper-v3",
                                   "--intensity", "3"]])
def test_table_fits_100_columns(capsys, args):
    _, out, _ = run(table_main, args, capsys)
    widths = [len(line) for line in out.splitlines()]
    assert max(widths) <= 100, max(widths)
    head = next(line for line in out.splitlines() if line.strip().startswith("kernel"))
    assert head.split() == ["kernel", "I", "emulation", "native", "[s]", "emul", "[s]",
                            "speedup", "bound", "crossover", "I"]
    # the legend below says what the columns and units are
    assert "I: arithmetic intensity, FLOP/byte" in out
    assert "speedup: native / emulated time" in out


def test_table_says_what_size_the_times_are_for(capsys):
    _, out, _ = run(table_main, ["--gpu", "b300"], capsys)
    assert "seconds for one call of the kernel at the size listed below" in " ".join(out.split())
    sizes = out.split("Times are for one call of each kernel at")[1]
    assert re.search(r"^  dgemm +W 8\.8e\+12 +Q 6\.44e\+09 +16384x16384 times 16384x16384",
                     sizes, re.M)
    assert re.search(r"^  spmv .*16777216 rows", sizes, re.M)
    _, md, _ = run(table_main, ["--format", "markdown", "--kernels", "dgemm"], capsys)
    assert "- dgemm: 16384x16384 times 16384x16384" in md


def test_table_wide_and_formats_are_documented(capsys):
    _, out, _ = run(table_main, ["--wide"], capsys)
    assert "break-even beta" in out and "native TF/s" in out
    text = " ".join(_help(table_main, capsys).split())
    for words in ("--format {text,markdown,json,csv}", "text (default): an aligned table under "
                  "100 columns", "json: a list of objects", "--wide"):
        assert words in text


# ------------------------------------------------------------ MPI benchmarks

MPIEXEC = shutil.which("mpiexec", path=str(Path(sys.executable).parent)) or shutil.which("mpiexec")
mpi = pytest.mark.skipif(MPIEXEC is None, reason="mpiexec not found (the mpi extra)")


def _mpirun(args, n=2, timeout=120, merge=False):
    pytest.importorskip("mpi4py")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    return subprocess.run([MPIEXEC, "-n", str(n), sys.executable, "-m"] + args,
                          stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT if merge else subprocess.PIPE,
                          text=True, timeout=timeout, env=env, cwd=str(ROOT))


@pytest.mark.slow
@mpi
@pytest.mark.parametrize("module", ["summa", "fft3d", "network", "hpl"])
def test_mpi_benchmark_help_is_printed_once(module):
    done = _mpirun([f"benchmarks.mpi.{module}", "--help"])
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.count("usage:") == 1, done.stdout
    assert done.stdout.count("show this help message") == 1


@pytest.mark.slow
@mpi
def test_mpi_benchmark_usage_error_is_printed_once():
    done = _mpirun(["benchmarks.mpi.summa", "--no-such-option"])
    assert done.returncode != 0
    assert done.stderr.count("error: unrecognized arguments") == 1, done.stderr
    assert done.stderr.count("usage:") == 1


@pytest.mark.slow
@mpi
def test_summa_help_shows_defaults():
    text = " ".join(_mpirun(["benchmarks.mpi.summa", "--help"]).stdout.split())
    for words in ("(default 512)", "(default 2)", "default 1024",
                  "default docs/_generated/tme_profile.json"):
        assert words in text


@pytest.mark.slow
@mpi
def test_summa_results_start_their_own_lines_and_are_explained():
    """stdout and stderr in one pipe, as on a terminal: the progress bar's line ends
    before the first result, and a legend explains "model Nx" and "in no phase"."""
    # n = 384: above ozaki's small-product path, which the benchmark does not time
    done = _mpirun(["benchmarks.mpi.summa", "--n", "384", "--grid", "1x2", "--repeats", "1",
                    "--network", "ndr"], merge=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:]
    lines = done.stdout.splitlines()
    assert any(line.startswith("emulated ranks=2 grid=1x2 n=384") for line in lines), done.stdout
    assert any(line.startswith("native   ranks=2") for line in lines)
    legend = " ".join(done.stdout.split("Legend:")[1].split())
    assert "model Nx: the TME model's predicted time / the measured one" in legend
    assert "'in no phase': time outside gemms, passes and communication" in legend


# ------------------------------------------------------------ validation.fft

def test_fft_campaign_help_shows_the_default_output_folder(capsys):
    from validation.fft.runner import main

    text = " ".join(_help(main, capsys).split())
    assert "--out DIR output folder (default: build/validation" in text


@pytest.mark.slow
def test_fft_campaign_counts_what_its_progress_bar_counts(tmp_path):
    """The closing line's count is the progress bar's total: the FFT cases and the
    checks of the long-double reference."""
    done = subprocess.run([sys.executable, "-m", "validation.fft", "--case", "fft-normal-64",
                           "--out", str(tmp_path)], capture_output=True, text=True,
                          timeout=300, cwd=str(ROOT))
    assert done.returncode in (0, 1), done.stderr[-2000:]
    totals = set(re.findall(r"\| *\d+/(\d+) \[", done.stderr))
    assert len(totals) == 1, done.stderr[-2000:]
    (total,) = totals
    assert re.search(rf"^{total} runs \(1 FFT cases, {int(total) - 1} checks of the "
                     r"reference\): \d+ failures", done.stdout, re.M), done.stdout
