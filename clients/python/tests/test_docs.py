"""The package's docs (issue 51): a page per reader, each linked from the
docs' index, and the reference generated from the docstrings, not stale."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

DOCS = Path(__file__).resolve().parents[1] / "docs"


def test_the_reference_is_the_docstrings_of_now() -> None:
    spec = importlib.util.spec_from_file_location("make_reference", DOCS / "make_reference.py")
    assert spec is not None and spec.loader is not None
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    assert (DOCS / "reference.md").read_text() == tool.render(), \
        "docs/reference.md is stale: python clients/python/docs/make_reference.py"


def test_every_page_is_linked_and_every_link_between_them_resolves() -> None:
    pages = {p.name for p in DOCS.glob("*.md")}
    index = (DOCS / "README.md").read_text()
    assert pages - {"README.md"} <= set(re.findall(r"\]\(([a-z]+\.md)\)", index))
    for page in DOCS.glob("*.md"):
        for target in re.findall(r"\]\(([^)#:]+\.md)(?:#[^)]*)?\)", page.read_text()):
            assert (page.parent / target).resolve().is_file(), f"{page.name} links {target}"
