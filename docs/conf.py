"""Sphinx configuration for the ozaki documentation (offline build)."""

from __future__ import annotations

import os
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, ROOT)  # ozaki, tme_model and fft import from the working tree

import ozaki  # noqa: E402

project = "ozaki"
author = "the ozaki developers"
copyright = "the ozaki developers"
release = ozaki.__version__
version = release

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.mathjax",
    # MathJax 3 shipped in a wheel (the ``docs`` extra) and copied into _static/mathjax:
    # the pages render their formulas offline, with no script from a CDN.
    "sphinx-mathjax-offline",
    "numpydoc",
]

# No network, neither when building nor when reading: no intersphinx, and MathJax is
# served from the build's own _static folder (a path relative to _static).
mathjax_path = "mathjax/tex-chtml.js"
templates_path: list[str] = []
exclude_patterns = ["_build", "_generated", "_scripts", "Thumbs.db", ".DS_Store"]
html_static_path = ["_static"]
html_theme = "alabaster"
html_theme_options = {
    "description": "FP64-grade GEMM by Ozaki Scheme II",
    "page_width": "1100px",
    "sidebar_width": "230px",
}

autodoc_member_order = "bysource"
autodoc_typehints = "none"  # numpydoc sections carry the types
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_attributes_as_param_list = False

rst_epilog = f"""
.. |moduli_version| replace:: ``{ozaki.MODULI_VERSION}``
"""
