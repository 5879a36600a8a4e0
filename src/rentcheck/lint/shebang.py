"""RC103: the executable bit and the ``#!`` line disagree."""

from __future__ import annotations

from rentcheck.lint.check import FileCheck
from rentcheck.lint.source import FileKind, SourceFile
from rentcheck.model import Applicability, Finding, Rule, RuleStatus, Severity

RULE = Rule(
    code="RC103",
    name="shebang-exec-mismatch",
    family="shell",
    summary="Executable bit and shebang line disagree",
    why=(
        "A launcher that runs `./train.sh` on the box fails with `Permission denied` when the "
        "file lost its executable bit (a zip upload, a Windows checkout, core.fileMode=false). "
        "A script marked executable without a `#!` line is run by whatever calls it: bash "
        "runs it as bash, nohup and setsid hand it to /bin/sh (dash on Debian and Ubuntu, "
        "where `[[` and arrays fail), and Python's subprocess or a launcher that execs it "
        "directly fails with `Exec format error`. Either way the job does not start and the "
        "GPU idles on your bill. Both bite only where the file is run by path (`./run.sh`, "
        "`nohup ./run.sh`, an exec from Python); run as `bash run.sh` neither matters, which "
        "is how public training repositories almost always run theirs (hence preview). "
        "(Only scripts are judged: an executable YAML or Markdown file is run by nobody, "
        "and sbatch reads its script itself.)"
    ),
    example_bad="-rw-r--r--  run.sh   (first line: #!/usr/bin/env bash)",
    example_good="-rwxr-xr-x  run.sh   (first line: #!/usr/bin/env bash)",
    fix=(
        "Make them agree: `chmod +x FILE && git add --chmod=+x FILE` for a script with a "
        "shebang, or remove the bit (`chmod -x FILE && git add --chmod=-x FILE`) from a file "
        "that is not meant to be executed."
    ),
    fix_applicability=Applicability.UNSAFE,
    default_severity=Severity.WARNING,
    status=RuleStatus.PREVIEW,
)


# Files nobody executes, whatever their mode says (data, docs, configs, notebooks).
_NOT_PROGRAMS = (
    ".yml", ".yaml", ".json", ".jsonl", ".md", ".rst", ".txt", ".csv", ".tsv", ".toml",
    ".cfg", ".ini", ".conf", ".ipynb", ".html", ".xml", ".in", ".lock", ".log", ".gitignore",
)  # fmt: skip


def _applies(source: SourceFile) -> bool:
    # Windows scripts never run on the box; binaries are executable without a shebang.
    path = source.path.lower()
    if source.is_binary or path.endswith((".bat", ".cmd", ".ps1", *_NOT_PROGRAMS)):
        return False
    return source.has_shebang or source.is_executable


def _submitted_to_slurm(source: SourceFile) -> bool:
    """An sbatch script: Slurm reads and copies it, so it needs no executable bit."""
    return source.path.endswith((".slurm", ".sbatch")) or b"\n#SBATCH " in source.data[:4096]


def _run(source: SourceFile) -> list[Finding]:
    if source.has_shebang and not source.is_executable:
        if source.kind is FileKind.PYTHON and source.path.endswith("__init__.py"):
            return []
        if _submitted_to_slurm(source):
            return []
        message = (
            "has a shebang but is not executable: `chmod +x "
            f"{source.path} && git add --chmod=+x {source.path}`"
        )
        state = "shebang-not-executable"
    elif source.is_executable and not source.has_shebang:
        message = (
            "is executable but has no shebang: add `#!/usr/bin/env bash` (or the right "
            f"interpreter), or `chmod -x {source.path} && git add --chmod=-x {source.path}`"
        )
        state = "executable-without-shebang"
    else:
        return []
    return [
        RULE.finding(
            message,
            path=source.path,
            line=1,
            col=1,
            details={"state": state, "mode": oct(source.mode & 0o777)},
        )
    ]


CHECK = FileCheck(RULE, _applies, _run)
