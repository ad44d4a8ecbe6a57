"""Write a module's docstring into a docs page as plain Markdown, so that a reader of the
repository sees the environment's tables, not an ``automodule`` directive.

The environments' module docstrings are their documentation (PettingZoo classic's
habit): reStructuredText with tables, parsed here by docutils and written as GitHub
Markdown between two markers in the page::

    <!-- docstring: barbu_env.envs.aec -->
    ...generated...
    <!-- end docstring -->

Run ``python docs/docstring_to_md.py`` after changing such a docstring;
``python docs/docstring_to_md.py --check`` exits 1 if a page is out of date (the tests
call ``stale_pages``). Section titles become headings one level below ``--level``;
a table with a header row becomes a Markdown table, one without (the ``Import / Agents /
...`` summary) a list of its rows.
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import re
from pathlib import Path

from docutils import nodes
from docutils.core import publish_doctree

ROOT = Path(__file__).resolve().parent.parent
#: The pages that carry docstrings, and the heading level of the docstring's sections there.
PAGES = {"docs/environment.md": 3, "docs/gym.md": 3}
MARKER = re.compile(r"<!-- docstring: ([\w.]+) -->\n.*?<!-- end docstring -->", re.S)


def module_docstring(module: str) -> str:
    """The docstring of ``module``, read from its source (nothing is imported)."""
    spec = importlib.util.find_spec(module.rpartition(".")[0] or module)
    package_dir = Path(spec.origin).parent
    path = package_dir / (module.rpartition(".")[2] + ".py") if "." in module else Path(spec.origin)
    return ast.get_docstring(ast.parse(path.read_text())) or ""


def inline(node: nodes.Node, in_table: bool = False) -> str:
    """A paragraph's (or a cell's) text as Markdown inline markup."""
    if isinstance(node, nodes.Text):
        text = str(node).replace("\n", " ")
        text = re.sub(r"([*`<>\\])", r"\\\1", text)
        text = re.sub(r"(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])", r"\\_", text)  # intraword _ is plain in Markdown
        return text.replace("|", r"\|") if in_table else text
    if isinstance(node, nodes.literal):
        code = node.astext().replace("\n", " ")
        fence = "``" if "`" in code else "`"
        code = code.replace("|", r"\|") if in_table else code
        return f"{fence}{code}{fence}"
    if isinstance(node, nodes.emphasis):
        return "*" + "".join(inline(c, in_table) for c in node.children) + "*"
    if isinstance(node, nodes.strong):
        return "**" + "".join(inline(c, in_table) for c in node.children) + "**"
    return "".join(inline(c, in_table) for c in node.children)


def cell_text(entry: nodes.Element) -> str:
    return " ".join(inline(p, in_table=True).strip() for p in entry.children)


def table(node: nodes.table) -> str:
    group = next(c for c in node.children if isinstance(c, nodes.tgroup))
    head = [[cell_text(e) for e in row.children] for part in group.findall(nodes.thead) for row in part.children]
    body = [[cell_text(e) for e in row.children] for part in group.findall(nodes.tbody) for row in part.children]
    if not head:  # a summary table: one item per row, its first cell in bold
        return "\n".join(f"- **{row[0]}**: {' '.join(row[1:])}" for row in body)
    width = len(head[0])
    lines = ["| " + " | ".join(head[0]) + " |", "|" + "---|" * width]
    lines += ["| " + " | ".join(row + [""] * (width - len(row))) + " |" for row in body]
    return "\n".join(lines)


def blocks(node: nodes.Element, level: int) -> list[str]:
    """The Markdown blocks of ``node``'s children."""
    out = []
    for child in node.children:
        if isinstance(child, nodes.section):
            title = inline(child.next_node(nodes.title))
            out.append("#" * level + " " + title)
            out += blocks(child, level + 1)
        elif isinstance(child, nodes.title):
            continue
        elif isinstance(child, nodes.paragraph):
            out.append(inline(child).strip())
        elif isinstance(child, nodes.table):
            out.append(table(child))
        elif isinstance(child, (nodes.bullet_list, nodes.enumerated_list)):
            bullet = "-" if isinstance(child, nodes.bullet_list) else "1."
            items = []
            for item in child.children:
                text = "\n\n".join(blocks(item, level))
                items.append(f"{bullet} " + text.replace("\n", "\n  "))
            out.append("\n".join(items))
        elif isinstance(child, nodes.literal_block):
            out.append("```\n" + child.astext() + "\n```")
        elif isinstance(child, (nodes.block_quote, nodes.container)):
            out += blocks(child, level)
        elif isinstance(child, (nodes.system_message, nodes.comment)):
            continue
        else:
            raise ValueError(f"no Markdown for a {child.tagname} in a docstring: {child.astext()[:60]!r}")
    return out


def to_markdown(docstring: str, level: int) -> str:
    """``docstring`` (reStructuredText) as Markdown, its sections at heading ``level``."""
    tree = publish_doctree(docstring, settings_overrides={"report_level": 5, "halt_level": 5, "doctitle_xform": False})
    return "\n\n".join(b for b in blocks(tree, level) if b) + "\n"


def render(page: str, level: int) -> str:
    """The page with every marked docstring written anew."""
    text = (ROOT / page).read_text()

    def fill(match: re.Match) -> str:
        module = match.group(1)
        body = to_markdown(module_docstring(module), level)
        return f"<!-- docstring: {module} -->\n{body}<!-- end docstring -->"

    return MARKER.sub(fill, text)


def stale_pages() -> list[str]:
    """The pages whose generated parts differ from their docstrings."""
    return [page for page, level in PAGES.items() if render(page, level) != (ROOT / page).read_text()]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if a page is out of date; write nothing")
    args = parser.parse_args(argv)
    stale = stale_pages()
    if args.check:
        for page in stale:
            print(f"{page}: out of date; run python docs/docstring_to_md.py")
        return 1 if stale else 0
    for page in stale:
        (ROOT / page).write_text(render(page, PAGES[page]))
        print(f"wrote {page}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
