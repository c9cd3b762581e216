"""Sphinx configuration of treedyn's documentation site.

The choice (docs/index.md): Sphinx, with autodoc + napoleon for the API reference read from
the numpydoc docstrings, and myst-parser for the Markdown pages already in docs/. Built with
warnings as errors by tests/test_docs_site.py: ``sphinx-build -W -b html docs OUT``.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

project = "treedyn"
author = "the treedyn developers"
copyright = "2026, the treedyn developers"
from treedyn_core import __version__ as release  # noqa: E402

version = release

extensions = ["sphinx.ext.autodoc", "sphinx.ext.napoleon", "myst_parser"]
source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
root_doc = "index"
exclude_patterns = ["_build", "notebooks", "studies"]

napoleon_google_docstring = False
napoleon_numpy_docstring = True
napoleon_use_rtype = False
autodoc_typehints = "description"
autodoc_member_order = "bysource"
autodoc_default_options = {"members": False}

# The Markdown pages link to headings as GitHub renders them (design.md#6-presets).
myst_heading_anchors = 4
myst_enable_extensions = ["dollarmath"]
# Pages written for GitHub link to source files outside the site (../treedyn_core/...) and
# name the README's sections; those links stay as written rather than becoming warnings.
suppress_warnings = ["myst.xref_missing", "myst.header"]

html_theme = "alabaster"
html_title = f"treedyn {release}"
