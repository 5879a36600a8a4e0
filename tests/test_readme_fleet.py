"""The README's fleet snippets (SkyPilot, Slurm array, Kubernetes Indexed Job) are what they
claim: valid YAML/sbatch that run `rentcheck audit --host local --output-format json`, and the
first-party plugin rules find nothing wrong with them that applies."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from rentcheck.lint.source import SourceFile

ROOT = Path(__file__).resolve().parent.parent
AUDIT = "rentcheck audit --host local --output-format json"


def snippets() -> dict[str, str]:
    text = (ROOT / "README.md").read_text()
    found = re.findall(r"<!-- snippet: (\w+) -->\n```\w*\n(.*?)```", text, re.S)
    return dict(found)


def _findings(name: str, text: str, tmp_path: Path, checks: list) -> set[str]:  # type: ignore[type-arg]
    path = tmp_path / name
    path.write_text(text)
    source = SourceFile.read(name, str(path))
    return {f.code for c in checks if c.applies(source) for f in c.run(source)}


def test_every_engine_has_its_snippet() -> None:
    assert set(snippets()) == {"skypilot", "slurm", "kubernetes"}
    for text in snippets().values():
        assert AUDIT in text.replace("\\\n", "").replace("  ", " ")
        assert "|| test $? -eq 1" in text


def test_skypilot_task_is_multi_node() -> None:
    task = yaml.safe_load(snippets()["skypilot"])
    assert task["num_nodes"] > 1 and "$SKYPILOT_NODE_RANK" in task["run"]


def test_slurm_array_passes_the_slurm_rules(tmp_path: Path) -> None:
    from rentcheck_slurm import FILE_CHECKS as CHECKS
    from rentcheck_slurm.script import parse_script

    text = snippets()["slurm"]
    assert parse_script(text).option("--array") is not None
    # A five-minute audit needs no warning signal (SLR001); nothing else may apply.
    assert _findings("audit.sbatch", text, tmp_path, CHECKS) <= {"SLR001"}


def test_indexed_job_passes_the_kubernetes_rules(tmp_path: Path) -> None:
    from rentcheck_k8s import CHECKS

    text = snippets()["kubernetes"]
    job = yaml.safe_load(text)
    assert job["kind"] == "Job" and job["spec"]["completionMode"] == "Indexed"
    assert "$JOB_COMPLETION_INDEX" in text
    assert _findings("audit-job.yaml", text, tmp_path, CHECKS) == set()


def test_readme_rule_pack_example_runs(tmp_path: Path) -> None:
    from rentcheck import FileCheck

    text = (ROOT / "README.md").read_text()
    (code,) = re.findall(r"```python\n(from rentcheck import .*?file_rule\n.*?)```", text, re.S)
    namespace: dict[str, object] = {}
    exec(compile(code, "README.md", "exec"), namespace)  # noqa: S102 - our own README
    checks = namespace["CHECKS"]
    assert isinstance(checks, list) and isinstance(checks[0], FileCheck)
    script = tmp_path / "launch.sh"
    script.write_text("# TODO: sync\n")
    source = SourceFile.read("launch.sh", str(script))
    assert checks[0].applies(source)
    assert [f.code for f in checks[0].run(source)] == ["ACME001"]
