"""The HTML docs work offline: no page loads a script or a stylesheet from the network,
and the formulas are typeset by a MathJax served from the build itself."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("sphinx")

DOCS = Path(__file__).resolve().parents[1] / "docs"
#: Where a page's markup loads something from: a script's src, a link's href (only
#: for stylesheets, preloads and icons: a hyperlink to a web page is fine), a CSS
#: @import or url().
_SCRIPT = re.compile(r"<script\b[^>]*\bsrc\s*=\s*[\"']([^\"']+)", re.I)
_LINK = re.compile(r"<link\b[^>]*>", re.I)
_HREF = re.compile(r"\bhref\s*=\s*[\"']([^\"']+)", re.I)
_REL_LOADED = re.compile(r"\brel\s*=\s*[\"'][^\"']*(stylesheet|preload|icon|modulepreload)", re.I)
_CSS_URL = re.compile(r"(?:@import\s+|url\(\s*)[\"']?([^\"')\s;]+)", re.I)


def _external(url: str) -> bool:
    return url.lower().startswith(("http:", "https:", "//"))


@pytest.fixture(scope="module")
def html(tmp_path_factory) -> Path:
    """The built docs: ``make test``'s own build, which it names in ``OZAKI_DOCS_HTML``
    (built with -W just before the suite), or else one built here into a temporary
    folder (no -W: only the output is checked)."""
    if not (DOCS / "conf.py").exists():
        pytest.skip("docs not in this checkout")
    given = os.environ.get("OZAKI_DOCS_HTML")
    if given:
        assert (Path(given) / "index.html").is_file(), f"OZAKI_DOCS_HTML={given} holds no build"
        return Path(given)
    out = tmp_path_factory.mktemp("html")
    done = subprocess.run([sys.executable, "-m", "sphinx", "-q", "-b", "html", str(DOCS), str(out)],
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, (
        "sphinx failed (the docs need the docs extra: pip install -e '.[docs]'):\n"
        + done.stderr[-3000:])
    return out


@pytest.mark.slow
def test_no_page_loads_anything_from_the_network(html):
    pages = sorted(html.rglob("*.html"))
    assert len(pages) > 5
    bad = []
    for page in pages:
        text = page.read_text(encoding="utf-8")
        urls = _SCRIPT.findall(text)
        urls += [h for tag in _LINK.findall(text) if _REL_LOADED.search(tag)
                 for h in _HREF.findall(tag)]
        for style in re.findall(r"<style\b[^>]*>(.*?)</style>", text, re.I | re.S):
            urls += _CSS_URL.findall(style)
        bad += [f"{page.relative_to(html)}: {u}" for u in urls if _external(u)]
    for css in (html / "_static").glob("*.css"):
        bad += [f"{css.relative_to(html)}: {u}" for u in _CSS_URL.findall(css.read_text("utf-8"))
                if _external(u)]
    assert not bad, "\n".join(bad)


def test_formulas_are_typeset_by_a_local_mathjax(html):
    page = (html / "tme_model.html").read_text(encoding="utf-8")
    assert 'class="math' in page  # the page has formulas ...
    scripts = _SCRIPT.findall(page)
    local = [s for s in scripts if "mathjax" in s.lower()]
    assert local and not any(_external(s) for s in local), scripts  # ... typeset locally
    for src in local:
        script = html / src.split("?")[0]
        assert script.is_file() and script.stat().st_size > 100_000, script
    # MathJax's CommonHTML output loads its fonts relative to its own folder
    fonts = script.parent / "output" / "chtml" / "fonts" / "woff-v2"
    assert any(fonts.glob("MathJax_Main-Regular.woff")), fonts
