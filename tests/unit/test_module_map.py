"""docs/architecture.md's module map is the package's: its wings, their order, their modules.

The map is the code block under "Module map and the flow of a business date": an entry
starts at the line's first column with the wing's name (``cli/``; top-level modules by
name, several in one entry separated by ", "), then two or more spaces and the text,
continued on indented lines. Checked against the import graph of
``tests/unit/test_imports.py`` (read with :mod:`ast`, nothing imported):

- every wing of the package has one entry, and nothing else has one;
- the entries run top to bottom as the imports do: a wing imports only wings below it;
- an entry names its wing's modules, each after a ``·`` (``· stage (…)``; a subfolder
  as ``· inputs/``, its modules after ``·`` too): every one of them, and nothing else.
"""

from __future__ import annotations

import re
from pathlib import Path

from test_imports import PACKAGE, graph, wing

MAP_FILE = Path(__file__).resolve().parents[2] / "docs" / "architecture.md"
HEADING = "## Module map and the flow of a business date"


def map_entries() -> dict[str, str]:
    """Wing -> its entry's text, in the map's order (top first)."""
    text = MAP_FILE.read_text(encoding="utf-8")
    section = text[text.index(HEADING) :]
    block = section.split("```", 2)[1].strip("\n")
    entries: list[tuple[list[str], list[str]]] = []
    for line in block.splitlines():
        if line[:1].strip():
            match = re.match(r"(\S.*?)(?:\s{2,}(.*))?$", line)
            assert match is not None, line
            names = [name.strip().rstrip("/") for name in match.group(1).split(",")]
            entries.append((names, [match.group(2) or ""]))
        else:
            entries[-1][1].append(line.strip())
    found: dict[str, str] = {}
    for names, lines in entries:
        for name in names:
            assert name not in found, f"{name} has two entries in the module map"
            found[name] = " ".join(lines)
    return found


def wings() -> dict[str, set[str]]:
    """Wing -> its modules (file stems; a subfolder as ``name/`` and its modules)."""
    found: dict[str, set[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE).with_suffix("").parts
        members = found.setdefault(parts[0], set())
        if len(parts) > 2:
            members.add(f"{parts[1]}/")
        if len(parts) > 1 and not parts[-1].startswith("__"):
            members.add(parts[-1])
    found.pop("__init__", None)
    return found


def test_the_map_has_an_entry_for_every_wing_and_no_other() -> None:
    assert sorted(map_entries()) == sorted(wings())


def test_the_map_runs_top_to_bottom_as_the_imports_do() -> None:
    order = list(map_entries())
    arrows, _ = graph()
    upward = sorted(
        f"{wing(module)} (entry {order.index(wing(module)) + 1}) imports {wing(target)} "
        f"(entry {order.index(wing(target)) + 1}): {module} -> {target}"
        for module, targets in arrows.items()
        for target in targets
        if module != "hashcdc"
        and wing(module) != wing(target)
        and order.index(wing(target)) < order.index(wing(module))
    )
    assert not upward, "the map draws these imports upward:\n" + "\n".join(upward)


def test_each_entry_names_its_wings_modules_and_nothing_else() -> None:
    entries, members = map_entries(), wings()
    wrong = {}
    for name, text in entries.items():
        named = set(re.findall(r"· ([a-z_]+/?)", text))
        if named != members[name]:
            wrong[name] = {
                "not named": sorted(members[name] - named),
                "no such module": sorted(named - members[name]),
            }
    assert not wrong, f"the map's modules are not the wings': {wrong}"
