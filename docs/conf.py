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
    "numpydoc",
]

# No network: no intersphinx, and MathJax is only referenced by URL in the HTML
# (the build itself never fetches it).
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
