"""One self-contained HTML page: plotly.js inlined exactly once, figures, tables, atomic write."""

from __future__ import annotations

import html
import json
import math
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path

from roofline.core.files import write_text_atomic

PLOTLY_CONFIG = {"displaylogo": False, "responsive": True}
STYLE = """
body { font-family: system-ui, -apple-system, Segoe UI, Roboto, sans-serif; margin: 1.5rem auto;
       max-width: 1200px; color: #1f2933; padding: 0 1rem; }
h1 { font-size: 1.6rem; } h2 { margin-top: 2.2rem; border-bottom: 1px solid #d9e2ec; }
table { border-collapse: collapse; margin: 0.6rem 0; font-size: 0.85rem; }
th, td { border: 1px solid #d9e2ec; padding: 0.2rem 0.5rem; text-align: right; }
th { background: #f0f4f8; } td.text, th.text { text-align: left; }
.note { color: #52606d; font-size: 0.9rem; } .band { color: #52606d; font-size: 0.8rem; } .figure { margin: 1rem 0; }
details { margin: 0.5rem 0; }
.lead { font-size: 1rem; line-height: 1.45; }
.row3 { display: grid; grid-template-columns: repeat(3, minmax(0, 1fr)); gap: 0.5rem; }
.controls { display: flex; flex-wrap: wrap; gap: 0.4rem 1.4rem; margin: 0.4rem 0; font-size: 0.95rem; }
.controls select { margin-left: 0.3rem; font-size: 0.95rem; }
tr.chosen td { background: #fff7d6; }
ul.why { font-size: 0.92rem; line-height: 1.4; padding-left: 1.2rem; } ul.why li { margin: 0.2rem 0; }
section#summary h2 { margin-top: 1rem; } section#summary td { white-space: nowrap; }
"""


def tool_version() -> str:
    """The installed roofline version, or 'unknown' when running from an uninstalled tree."""
    try:
        return metadata.version("roofline")
    except metadata.PackageNotFoundError:
        return "unknown"


def json_safe(value: object) -> object:
    """Lists/dicts with NaN and infinities replaced by null (JSON has neither)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    return value


def figure_html(fig: dict[str, object], div_id: str) -> str:
    """A figure spec as a plotly <div> and its Plotly.newPlot call (plotly.js is added once per page)."""
    spec = json.dumps(
        json_safe({"data": fig["data"], "layout": fig["layout"], "config": PLOTLY_CONFIG}),
        separators=(",", ":"),
        allow_nan=False,
    ).replace("</", "<\\/")
    height = int(fig["layout"].get("height", 450))
    return (
        f'<div id="{div_id}" class="plotly-graph-div" style="height:{height}px; width:100%;"></div>'
        f'<script type="text/javascript">(function(){{var f={spec};'
        f'Plotly.newPlot("{div_id}", f.data, f.layout, f.config);}})();</script>'
    )


class Markup(str):
    """A cell's HTML, escaped where it holds text already: :func:`html_table` puts it in as it is."""


def html_table(headers: Sequence[str], rows: Sequence[Sequence[object]], text_columns: int = 0) -> str:
    """An escaped HTML table (cells that are :class:`Markup` go in as they are); the first ``text_columns``
    columns are left-aligned."""

    def cell(tag: str, i: int, value: object) -> str:
        cls = ' class="text"' if i < text_columns else ""
        return f"<{tag}{cls}>{value if isinstance(value, Markup) else html.escape(str(value))}</{tag}>"

    head = "".join(cell("th", i, h) for i, h in enumerate(headers))
    body = "".join("<tr>" + "".join(cell("td", i, v) for i, v in enumerate(r)) + "</tr>" for r in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def page_html(title: str, sections: Sequence[str]) -> str:
    """The whole document: styles, plotly.js once in <head>, then the sections in order."""
    from plotly.offline import get_plotlyjs

    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{html.escape(title)}</title><style>{STYLE}</style>"
        f'<script type="text/javascript">{get_plotlyjs()}</script></head><body>'
        + "\n".join(sections)
        + "</body></html>\n"
    )


def write_page(path: str | Path, text: str) -> Path:
    """Write ``text`` to ``path`` atomically (temp file + rename), creating parent folders."""
    return write_text_atomic(path, text)
