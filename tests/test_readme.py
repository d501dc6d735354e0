"""The README's "Writing an actor" and "Python API" sections run as written: each fenced
```python block under those headings is executed on its own, in a fresh interpreter, and must
succeed without a line on stderr (the library logs nothing the program did not configure)."""

from __future__ import annotations

import re

import pytest

from tests.support.programs import ROOT, run_python

README = ROOT / "README.md"
SECTIONS = {
    "Writing an actor": "hello Lin Wei\n",
    "Python API": "'world' answered town.state, expected clock.status\n",
}
"""Each section, and a line its blocks print."""
_FENCED_PYTHON = re.compile(r"^```python\n(.*?)^```$", re.DOTALL | re.MULTILINE)


def section(text: str, heading: str) -> str:
    """The body of the level-2 section titled ``heading``, up to the next level-1 or 2 heading."""
    match = re.search(rf"^## {re.escape(heading)}\n(.*?)(?=^#{{1,2}} |\Z)", text, re.DOTALL | re.MULTILINE)
    if match is None:
        raise AssertionError(f"README.md has no section '## {heading}'")
    return match.group(1)


def python_blocks(heading: str) -> list[str]:
    return _FENCED_PYTHON.findall(section(README.read_text(encoding="utf-8"), heading))


def test_section_and_block_extraction() -> None:
    text = "# T\n## A\nx\n```python\nprint(1)\n```\n```bash\nls\n```\n## B\n```python\nprint(2)\n```\n"
    assert _FENCED_PYTHON.findall(section(text, "A")) == ["print(1)\n"]
    assert _FENCED_PYTHON.findall(section(text, "B")) == ["print(2)\n"]
    with pytest.raises(AssertionError, match="no section '## C'"):
        section(text, "C")


@pytest.mark.parametrize(("heading", "printed"), SECTIONS.items())
def test_the_readme_sections_python_blocks_run(heading: str, printed: str) -> None:
    blocks = python_blocks(heading)
    assert blocks, f"README.md's '{heading}' section has no ```python block"
    output = ""
    for number, code in enumerate(blocks, 1):
        done = run_python(code)
        where = f"README.md '{heading}', python block {number}"
        assert done.returncode == 0, f"{where} failed:\n{done.stderr[-3000:]}"
        assert done.stderr == "", f"{where} wrote to stderr:\n{done.stderr[-3000:]}"
        output += done.stdout
    assert printed in output
