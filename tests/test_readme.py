"""What a newcomer meets first: the README's example, the campaigns' entry points,
the packaging that ``make demo`` installs, and the main job's warm-up."""

from __future__ import annotations

import configparser
import fnmatch
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()

# What the README's example must compute (appended to its code block).
CHECKS = """
import numpy as np
assert isinstance(C, np.ndarray) and C.shape == (512, 512)
assert np.allclose(S, np.matmul(A.reshape(8, 64, 512), A.T), rtol=1e-13, atol=1e-12)
assert np.allclose(Z, (A + 1j * A) @ A.T, rtol=1e-13, atol=1e-12)
assert np.allclose(X, np.fft.fft(A), rtol=1e-13, atol=1e-10)
assert np.allclose(X2, np.fft.rfft2(A), rtol=1e-13, atol=1e-9)
assert "cpu-blas" in ozaki.available_engines()
print("README EXAMPLE OK")
"""


def _env(**extra) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.setdefault("OPENBLAS_NUM_THREADS", "1")
    env.update(extra)
    return env


def _run(args, cwd, timeout=120, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], cwd=cwd, env=_env(), capture_output=True,
                          text=True, timeout=timeout, **kw)


def _python_blocks(text: str) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", text, flags=re.S | re.M)


@pytest.mark.slow
def test_readme_python_example_runs(tmp_path):
    blocks = _python_blocks(README)
    assert blocks, "the README has no ```python example"
    script = tmp_path / "example.py"
    script.write_text("\n".join(blocks) + CHECKS)
    r = _run([str(script)], cwd=tmp_path, timeout=240)
    assert r.returncode == 0, r.stderr[-3000:]
    # print(info.num_moduli, info.gemms, info.seconds): two counts, then the phases' seconds
    assert re.search(r"^\d+ \d+ \{'", r.stdout, flags=re.M), r.stdout
    assert r.stdout.rstrip().endswith("README EXAMPLE OK")


@pytest.mark.slow
def test_readme_commands_exist():
    """The commands the README sends a user to are the ones the venv provides."""
    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "setup.cfg")
    scripts = {line.split("=")[0].strip()
               for line in cfg["options.entry_points"]["console_scripts"].splitlines()
               if line.strip()}
    named = set(re.findall(r"\b(tme-[a-z]+)\b", README))
    assert named and named <= scripts, named - scripts
    assert "source .venv/bin/activate" in README
    # mpiexec comes from the venv: the mpich wheel of the mpi extra, which make test installs
    assert "mpich" in cfg["options.extras_require"]["mpi"]
    assert re.search(r'install -q -e "\.\[[a-z,]*\bmpi\b', (ROOT / "Makefile").read_text())
    assert "`mpiexec` is in `.venv/bin`" in README


def test_readme_states_cpu_expectations():
    section = README.split("## What to expect on a CPU", 1)[1].split("\n## ", 1)[0]
    for needle in ("slower", "numpy's DGEMM", "scipy.fft", "AVX", "Certified accuracy",
                   "thread count", "MPI grid", "tensor cores", "tme_model"):
        assert needle in section, needle
    assert re.search(r"about \d+(-\d+)?x", section)


@pytest.mark.slow
@pytest.mark.parametrize("module", ["validation", "validation.fft"])
def test_campaign_help_from_root(module):
    r = _run(["-m", module, "--help"], cwd=ROOT)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.startswith(f"usage: python -m {module}")


@pytest.mark.slow
def test_campaign_outside_root_as_readme_says(tmp_path):
    """The README: found from anywhere in the editable venv, else 'No module named'."""
    r = _run(["-m", "validation", "--help"], cwd=tmp_path)
    probe = _run(["-c", "import importlib.util as u; s = u.find_spec('validation'); "
                  "print(s.origin if s else '')"], cwd=tmp_path)
    origin = probe.stdout.strip()
    if origin:
        assert Path(origin).resolve() == ROOT / "validation" / "__init__.py"
        assert r.returncode == 0 and r.stdout.startswith("usage: python -m validation")
    else:
        assert r.returncode != 0 and "No module named validation" in r.stderr
        assert "elsewhere Python answers `No module named validation`" in README


_HIDE = ("import runpy, sys\n"
         "sys.modules[{missing!r}] = None  # as if the test extra were not installed\n"
         "sys.argv = ['python -m {module}'] + {argv!r}\n"
         "runpy.run_module({module!r}, run_name='__main__', alter_sys=True)\n")


@pytest.mark.slow
@pytest.mark.parametrize("module, missing", [("validation", "tqdm"),
                                             ("validation", "matplotlib"),
                                             ("validation.fft", "mpmath")])
def test_campaign_without_test_extra_says_what_to_install(module, missing):
    code = _HIDE.format(missing=missing, module=module, argv=["--quick"])
    r = _run(["-c", code], cwd=ROOT)
    assert r.returncode == 2, (r.stdout, r.stderr[-2000:])
    assert "Traceback" not in r.stderr and "ModuleNotFoundError" not in r.stderr
    assert f"{missing} is needed by python -m {module}" in r.stderr
    assert 'pip install -e ".[test]"' in r.stderr and "make test" in r.stderr
    assert "repository root" in r.stderr
    # --help still works without the extra
    code = _HIDE.format(missing=missing, module=module, argv=["--help"])
    r = _run(["-c", code], cwd=ROOT)
    assert r.returncode == 0 and "usage: python -m" in r.stdout, r.stderr[-2000:]


def test_packaging_declares_every_folder_and_data_file():
    """What setuptools warns about in make demo: an importable folder (tme_model/data)
    absent from ``packages``, or a data file no ``package_data`` pattern ships."""
    from setuptools.config.setupcfg import read_configuration

    opts = read_configuration(str(ROOT / "setup.cfg"))["options"]
    packages = set(opts["packages"])
    data = opts.get("package_data", {})
    top = {"ozaki", "fft", "tme_model"}
    assert top <= packages
    assert not any("__pycache__" in p for p in packages)
    for name in top:
        for folder, dirs, files in os.walk(ROOT / name):
            dirs[:] = [d for d in dirs if d != "__pycache__" and not d.startswith(".")]
            pkg = ".".join(Path(folder).relative_to(ROOT).parts)
            assert pkg in packages, f"{pkg} is importable but not declared"
            for f in files:
                if f.endswith((".py", ".pyc")) or f.startswith("."):
                    continue
                assert any(fnmatch.fnmatch(f, pat) for pat in data.get(pkg, [])), \
                    f"{pkg}/{f} is not package data"


def test_main_job_warms_each_configuration_before_timing(monkeypatch, capsys):
    import ozaki.__main__ as job

    events = []
    timing = [False]
    real_dgemm, real_best = job.dgemm, job._best_time

    def dgemm(A, B, **kw):
        events.append((kw.get("scheme"), kw.get("mode"), A.shape, timing[0]))
        return real_dgemm(A, B, **kw)

    def best_time(f, repeat):
        timing[0] = True
        try:
            return real_best(f, repeat)
        finally:
            timing[0] = False

    monkeypatch.setattr(job, "dgemm", dgemm)
    monkeypatch.setattr(job, "_best_time", best_time)
    assert job.main(["--n", "24", "--sample", "8", "--repeat", "2"]) == 0
    out = capsys.readouterr().out

    import ozaki
    schemes = ("fp64",) + tuple(s for s in ozaki.SCHEMES if s != "fp64")
    assert "int7" in schemes and sorted(schemes) == sorted(ozaki.SCHEMES)
    configs = [(s, m) for s in schemes for m in ("accurate", "fast")]
    warm = [e for e in events if not e[3]]
    timed = [e for e in events if e[3]]
    # one untimed call per configuration, on the timed calls' size, all before any timing
    assert [(s, m) for s, m, _, _ in warm] == configs
    assert all(shape == (24, 24) for _, _, shape, _ in events)
    assert events[:len(configs)] == warm
    assert [(s, m) for s, m, _, _ in timed] == [c for c in configs for _ in range(2)]
    # said on screen, before the table
    say = out.index("compiling kernels on first use (cached afterwards)")
    assert say < out.index("\nscheme ") < out.index("\nfp8 ") < out.index("\nint7 ")
    assert "first calls include numba compilation" not in out


def test_main_job_reports_each_rows_engine_and_gemms(monkeypatch, capsys):
    """With small products emulated, the table's moduli, engine and GEMMs columns are the
    timed calls' ``info``, and the footnote's counts per modulus are true of them."""
    import ozaki
    import ozaki.__main__ as job

    infos = []
    real_dgemm = job.dgemm

    def dgemm(A, B, **kw):  # records the timed calls' info (the warm-up asks for none)
        result = real_dgemm(A, B, **kw)
        if kw.get("return_info"):
            infos.append(result[1])
        return result

    monkeypatch.setattr(job, "dgemm", dgemm)
    with ozaki.set_small_products(False):
        assert job.main(["--n", "24", "--sample", "8", "--repeat", "1"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    header = next(ln for ln in lines if ln.startswith("scheme "))
    start = lines.index(header) + 3  # past the rule and the numpy row
    rows = [ln.split() for ln in lines[start:start + len(infos)]]
    assert len(infos) == 2 * len(ozaki.SCHEMES) and lines[start + len(infos)] == ""
    assert all(len(ln) == len(header) for ln in lines[start - 3:start + len(infos)])
    assert [(r[0], int(r[1]), r[2], r[3], int(r[4])) for r in rows] == [
        (i.scheme, i.num_moduli, i.mode, i.engine, i.gemms) for i in infos]
    assert all(i.path == "emulated" and i.num_moduli > 0 for i in infos)
    text = " ".join(out.split())
    assert "compensated path" not in text
    engines = list(dict.fromkeys(i.engine for i in infos))
    assert f'(engine="auto", info.engine): {", ".join(engines)}.' in text
    for i in infos:
        per = ozaki.gemms_per_modulus(i.scheme, i.engine)
        assert re.search(rf"\b{i.scheme} {per}\b[^;]* on {i.engine} \(", text)
        # the footnote's rule: per * moduli, +1 for the accurate bound, +1..3 if refined
        extra = i.gemms - per * i.num_moduli
        if i.mode == "fast":
            assert extra == 0
        else:
            assert (extra == 1) if i.refined_block == (0, 0) else (2 <= extra <= 4)
    split = (any(i.scheme == "int8" and i.engine == "cpu-onednn" for i in infos)
             and ozaki.get_engine("cpu-onednn").gemms_per_call == 2)
    assert ("takes the split encoding" in text) == split


def test_main_job_footnote_names_the_split_encoding(monkeypatch):
    """Where cpu-onednn runs without VNNI, the footnote says int8 residues cost two
    INT8 GEMMs' work per counted GEMM (and not otherwise)."""
    from types import SimpleNamespace

    import ozaki.__main__ as job

    info = SimpleNamespace(scheme="int8", engine="cpu-onednn", path="emulated")
    for per_call, said in ((1, False), (2, True)):
        monkeypatch.setattr(job, "get_engine", lambda name: SimpleNamespace(
            gemms_per_call=per_call))
        monkeypatch.setattr(job, "gemms_per_modulus", lambda scheme, name: 1)
        text = " ".join(job._footnote([info]))
        assert ("takes the split encoding" in text) == said
        assert "int8 1 on cpu-onednn (oneDNN INT8 GEMMs)" in text
