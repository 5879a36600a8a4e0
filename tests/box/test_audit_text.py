"""`rentcheck audit` text output: the measured facts as a table, not only the verdict."""

from __future__ import annotations

from pathlib import Path

from rentcheck.textwidth import display_width, table

# --host local sees every process on this machine: another one's edited script (RC401/RC402)
# is not what these tests are about.
QUIET = ("--ignore", "RC401,RC402")


def test_text_output_shows_free_space_and_inodes_against_the_budget(cli, tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    ok = cli(
        "audit",
        "--host",
        "local",
        "--path",
        f"data={data}",
        "--budget",
        "1KiB",
        *QUIET,
        cwd=tmp_path,
    )
    assert ok.code == 0, ok.out + ok.err
    lines = ok.out.splitlines()
    assert lines[0] == "local: measured"
    header = lines[1].split()
    assert header == ["path", "mount", "free", "inodes", "free", "budget"]
    row = next(line for line in lines if line.strip().startswith(f"data={data}"))
    assert " of " in row and "% used)" in row and row.endswith("1.0 KiB fits")
    # The columns line up: each header word starts where its column starts.
    at = lines[1].index("mount")
    assert row[at - 2 : at + 1] == "  /"  # the mount point starts under its header
    assert any(line.startswith("  memory  ") for line in lines)
    assert any(line.startswith("  detach  ") for line in lines)
    assert lines[-1] == "All checks passed."

    short = cli(
        "audit",
        "--host",
        "local",
        "--path",
        f"data={data}",
        "--budget",
        "900TiB",
        *QUIET,
        cwd=tmp_path,
    )
    assert short.code == 1
    row = next(line for line in short.out.splitlines() if line.strip().startswith("data="))
    assert row.endswith("900.0 TiB SHORT")
    assert "RC301" in short.out


def test_box_text_in_the_table_is_escaped(cli, tmp_path: Path) -> None:
    hostile = tmp_path / "x\x1b[2Jy"
    hostile.mkdir()
    result = cli("audit", "--host", "local", "--path", f"data={hostile}", *QUIET, cwd=tmp_path)
    assert "\x1b" not in result.out
    assert "x\\x1b[2Jy" in result.out


def test_columns_align_by_display_width_after_chinese_text() -> None:
    lines = table([["关机", "keeps"], ["stop", "keeps"], ["释放实例", "deletes"]])
    starts = {
        display_width(line[: line.index(word)])
        for line, word in zip(lines, ["keeps", "keeps", "deletes"], strict=True)
    }
    assert starts == {10}
    assert display_width("关机") == 4 and display_width("e\u0301") == 1
