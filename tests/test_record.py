"""record: the dataclass-like value classes of the lint path behave as dataclasses do."""

from __future__ import annotations

import copy
import pickle

import pytest

from rentcheck.model import Applicability, Edit, Finding, Fix, Severity
from rentcheck.record import FrozenInstanceError, field, field_names, record, replace


@record
class Point:
    x: int
    y: int = 0
    tags: dict[str, str] = field(default_factory=dict)
    note: str = field(default="", compare=False, repr=False)


@record(frozen=False)
class Counter:
    name: str
    hits: int = 0


def test_init_positional_keyword_defaults_and_factories() -> None:
    a, b = Point(1), Point(x=1, y=2, tags={"k": "v"})
    assert (a.x, a.y, a.tags, a.note) == (1, 0, {}, "")
    assert (b.x, b.y, b.tags) == (1, 2, {"k": "v"})
    assert Point(1).tags is not Point(1).tags  # a fresh dict each time
    with pytest.raises(TypeError):
        Point()  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        Point(1, z=3)  # type: ignore[call-arg]
    assert field_names(Point) == ("x", "y", "tags", "note")


def test_frozen_eq_hash_repr() -> None:
    p = Point(1, 2)
    with pytest.raises(FrozenInstanceError):
        p.x = 3  # type: ignore[misc]
    with pytest.raises(AttributeError):
        del p.y
    assert p == Point(1, 2, note="ignored by eq") and p != Point(1, 3)
    assert p != (1, 2) and Point(1, 2) != Counter("x")
    assert repr(p) == "Point(x=1, y=2, tags={})"
    assert (
        hash(Edit("a", b"x")) == hash(Edit("a", b"x"))
        and len({Edit("a", b"x")} | {Edit("a", b"x")}) == 1
    )
    with pytest.raises(TypeError):
        hash(p)  # a dict field: unhashable, as with a frozen dataclass


def test_mutable_record_is_unhashable_and_assignable() -> None:
    c = Counter("rc")
    c.hits += 1
    assert c == Counter("rc", 1) and repr(c) == "Counter(name='rc', hits=1)"
    with pytest.raises(TypeError):
        hash(c)


def test_replace_copy_and_pickle() -> None:
    finding = Finding(
        "RC101",
        Severity.ERROR,
        "CRLF",
        path="run.sh",
        line=1,
        details={"crlf_lines": 2},
        fix=Fix("to LF", Applicability.SAFE, (Edit("/abs/run.sh", b"x\n"),)),
    )
    moved = replace(finding, path="other.sh")
    assert moved.path == "other.sh" and moved.fix == finding.fix and finding.path == "run.sh"
    # the fork pool sends findings between processes; our own bytes, not untrusted data
    assert pickle.loads(pickle.dumps(finding)) == finding  # noqa: S301
    assert copy.deepcopy(finding) == finding and copy.copy(finding) == finding
    with pytest.raises(TypeError):
        replace(finding, no_such_field=1)


def test_subclass_adds_fields_after_the_base() -> None:
    @record(frozen=False)
    class Tagged(Counter):
        tag: str = "t"

    assert field_names(Tagged) == ("name", "hits", "tag")
    assert Tagged("a", 2, "b").tag == "b" and Tagged("a").hits == 0


def test_required_after_default_is_refused() -> None:
    with pytest.raises(TypeError, match="without a default"):

        @record
        class Bad:
            a: int = 1
            b: int  # type: ignore[misc]


def test_lint_path_loads_no_dataclasses() -> None:
    """The point of record: a lint run does not import dataclasses (nor inspect)."""
    import subprocess
    import sys

    probe = (
        "import sys\n"
        "import rentcheck.commands.check, rentcheck.lint.engine, rentcheck.report.text\n"
        "print(sorted(m for m in ('dataclasses', 'inspect') if m in sys.modules))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    ).stdout
    assert out.strip() == "[]"


def test_redeclared_field_keeps_its_place_and_mixing_is_refused() -> None:
    @record
    class Base:
        a: int
        b: int = 2

    @record
    class Child(Base):
        a: int = 1  # redeclared with a default: still the first field

    assert field_names(Child) == ("a", "b") and Child(5).a == 5

    with pytest.raises(TypeError, match="frozen and mutable"):

        @record(frozen=False)
        class Thawed(Base):
            c: int = 0


def test_mutable_default_is_refused_and_explicit_hash_kept() -> None:
    with pytest.raises(ValueError, match="default_factory"):

        @record
        class Bad:
            items: list[int] = []  # noqa: RUF012

    @record
    class ByName:
        name: str
        weight: int = 0

        def __hash__(self) -> int:
            return hash(self.name)

    assert hash(ByName("x", 1)) == hash("x")


def test_records_only_where_a_check_imports_them_and_never_beside_dataclasses(tmp_path) -> None:
    """record.py's rule: a module declares records only if a warm ``rentcheck check`` imports
    it or it is lint's; no module declares both kinds of value class."""
    import re
    import subprocess
    import sys
    from pathlib import Path

    import rentcheck

    (tmp_path / "a.sh").write_text("#!/bin/sh\necho hi\n")
    probe = (
        "import sys; from rentcheck.cli import main; main(['check', '--exit-zero', '.']);"
        "print('MODULES=' + ' '.join(m for m in sys.modules if m.startswith('rentcheck')))"
    )
    for _ in range(2):  # the second run is answered from the cache
        out = subprocess.run(
            [sys.executable, "-c", probe], cwd=tmp_path, capture_output=True, text=True, check=True
        ).stdout
    imported = set(out.split("MODULES=")[1].split())
    package = Path(rentcheck.__file__).parent
    declares_record = re.compile(r"^\s*@record\b", re.M)
    declares_dataclass = re.compile(r"^\s*@(dataclasses\.)?dataclass\b", re.M)
    misplaced, mixed = [], []
    for path in sorted(package.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        parts = path.relative_to(package.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        if declares_record.search(text):
            if name not in imported and not name.startswith("rentcheck.lint."):
                misplaced.append(name)
            if declares_dataclass.search(text):
                mixed.append(name)
    assert misplaced == [], f"records off the check path (use dataclasses): {misplaced}"
    assert mixed == [], f"records and dataclasses in one module: {mixed}"


def test_replace_takes_a_dataclass_too() -> None:
    import dataclasses

    @dataclasses.dataclass(frozen=True)
    class Result:
        findings: tuple[str, ...]
        ok: bool = True

    assert replace(Result(("a",)), ok=False) == Result(("a",), ok=False)
    assert replace(Point(1), y=5) == Point(1, 5)
