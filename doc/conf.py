"""Sphinx configuration for the skdp documentation (builds offline)."""

import os
import sys
import warnings

sys.path.insert(0, os.path.abspath(".."))
sys.path.insert(0, os.path.abspath("_ext"))

import skdp  # noqa: E402

project = "skdp"
author = "skdp developers"
copyright = "2026, skdp developers"
release = skdp.__version__
version = release

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "plain_math",  # formulas as LaTeX source: no MathJax from a CDN
    "sphinx.ext.viewcode",
    "numpydoc",
    "sphinx_gallery.gen_gallery",
]

# Offline build: no intersphinx, no remote assets.
templates_path = ["_templates"]
exclude_patterns = ["_build", "auto_examples/*.ipynb", "auto_examples/*.py.md5"]
autosummary_generate = True
html_math_renderer = "plain_math"
# scikit-learn's generated metadata-routing setters and mixin methods point to
# sklearn's own docs, which an offline build cannot link.
autodoc_default_options = {
    "members": True,
    "inherited-members": False,
    "exclude-members": (
        "set_fit_request, set_predict_request, set_score_request, "
        "set_partial_fit_request, get_metadata_routing, get_params, set_params, score"
    ),
}
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False

html_theme = "pydata_sphinx_theme"
html_title = "skdp"
# No html_static_path: git does not keep an empty _static folder, and a
# missing one is a warning (an error under -W) on a fresh clone.
html_theme_options = {
    "navigation_with_keys": False,
    "show_prev_next": False,
}

sphinx_gallery_conf = {
    "examples_dirs": "../examples",
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"/plot_",
    "ignore_pattern": r"quickstart\.py",
    "download_all_examples": False,
    "remove_config_comments": True,
    "within_subsection_order": "FileNameSortKey",
    "matplotlib_animations": False,
    "plot_gallery": "True",
    # The computation-times pages load DataTables and jQuery from a CDN.
    "write_computation_times": False,
}

warnings.filterwarnings(
    "ignore", category=UserWarning, message="Matplotlib is currently using agg"
)
