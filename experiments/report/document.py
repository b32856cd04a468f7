"""A report as a list of blocks (headings, paragraphs, tables, figures), rendered to
Markdown and to self-contained HTML."""

from __future__ import annotations

import base64
import html
import re
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass
class Heading:
    level: int
    text: str


@dataclass
class Para:
    text: str


@dataclass
class Table:
    header: list[str]
    rows: list[list[str]]
    align: str  # one of "l", "r" per column


@dataclass
class Figure:
    file: str  # relative to the report folder
    title: str
    caption: str
    png: bytes


Block = Heading | Para | Table | Figure


def _md_escape(text: str) -> str:
    return text.replace("|", "\\|")


def render_markdown(blocks: Sequence[Block]) -> str:
    """Markdown of a document."""
    out: list[str] = []
    for b in blocks:
        if isinstance(b, Heading):
            out += ["#" * b.level + " " + b.text, ""]
        elif isinstance(b, Para):
            out += [b.text, ""]
        elif isinstance(b, Table):
            out.append("| " + " | ".join(_md_escape(h) for h in b.header) + " |")
            out.append("|" + "|".join(":---" if a == "l" else "---:" for a in b.align) + "|")
            for r in b.rows:
                out.append("| " + " | ".join(_md_escape(c) for c in r) + " |")
            out.append("")
        elif isinstance(b, Figure):
            out += [f"![{b.title}]({b.file})", "", f"*{b.title}.* {b.caption}".rstrip(), ""]
    return "\n".join(out).rstrip() + "\n"


def _inline_html(text: str) -> str:
    """Escape, then render `code`, **bold** and [links](url) as Markdown does."""
    s = html.escape(text, quote=False)
    s = re.sub(r"`([^`]+)`", r"<code>\1</code>", s)
    s = re.sub(r"\*\*([^*]+)\*\*", r"<strong>\1</strong>", s)
    s = re.sub(r"\[([^\]]+)\]\(([^)\s]+)\)", r'<a href="\2">\1</a>', s)
    return s


_CSS = """
body { font-family: -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; margin: 2em auto; max-width: 1200px;
       padding: 0 1em; color: #1b1f23; line-height: 1.45; }
h1, h2, h3 { border-bottom: 1px solid #e1e4e8; padding-bottom: .2em; }
table { border-collapse: collapse; margin: 1em 0; font-size: 0.9em; }
th, td { border: 1px solid #d0d7de; padding: 4px 8px; }
th { background: #f6f8fa; }
td.r, th.r { text-align: right; font-variant-numeric: tabular-nums; }
td.r { white-space: nowrap; }
tr:nth-child(even) td { background: #fbfcfd; }
figure { margin: 1.5em 0; }
figure img { max-width: 100%; border: 1px solid #e1e4e8; }
figcaption { font-size: 0.9em; color: #57606a; }
code { background: #f6f8fa; padding: 0 .2em; }
""".strip()


def render_html(blocks: Sequence[Block], title: str) -> str:
    """A self-contained HTML page of a document: inline style, figures embedded as
    base64 PNG data."""
    out = ["<!DOCTYPE html>", '<html lang="en">', "<head>", '<meta charset="utf-8">',
           f"<title>{html.escape(title)}</title>", f"<style>\n{_CSS}\n</style>", "</head>", "<body>"]
    for b in blocks:
        if isinstance(b, Heading):
            out.append(f"<h{b.level}>{_inline_html(b.text)}</h{b.level}>")
        elif isinstance(b, Para):
            out.append(f"<p>{_inline_html(b.text)}</p>")
        elif isinstance(b, Table):
            out.append("<table>")
            out.append("<tr>" + "".join(f'<th class="{a}">{_inline_html(h)}</th>'
                                        for h, a in zip(b.header, b.align)) + "</tr>")
            for r in b.rows:
                out.append("<tr>" + "".join(f'<td class="{a}">{_inline_html(c)}</td>' for c, a in zip(r, b.align))
                           + "</tr>")
            out.append("</table>")
        elif isinstance(b, Figure):
            data = base64.b64encode(b.png).decode()
            out.append(f'<figure><img alt="{html.escape(b.title)}" src="data:image/png;base64,{data}">'
                       f"<figcaption><strong>{_inline_html(b.title)}.</strong> {_inline_html(b.caption)}"
                       "</figcaption></figure>")
    out += ["</body>", "</html>"]
    return "\n".join(out) + "\n"
