"""Render math as its LaTeX source: an HTML math renderer with no JavaScript.

``sphinx.ext.mathjax`` loads MathJax from a CDN, so the documentation would
need the network to show formulas. This renderer writes the LaTeX source
itself (``\\alpha`` stays ``\\alpha``) in a styled element: readable offline,
nothing to download, no warning under ``-W``.
"""

from docutils import nodes


def _visit_inline(self, node):
    self.body.append(
        self.starttag(node, "code", "", CLASS="math notranslate")
        + self.encode(node.astext())
        + "</code>"
    )
    raise nodes.SkipNode


def _visit_block(self, node):
    if node.get("number"):
        self.body.append(f'<span class="eqno">({node["number"]})</span>')
    self.body.append(
        self.starttag(node, "pre", "", CLASS="math notranslate")
        + self.encode(node.astext())
        + "</pre>\n"
    )
    raise nodes.SkipNode


def setup(app):
    app.add_html_math_renderer(
        "plain_math", (_visit_inline, None), (_visit_block, None)
    )
    return {"parallel_read_safe": True, "parallel_write_safe": True}
