"""Plugin rules over a box's facts and over a gate's outcome (``rentcheck.box_rule`` and
``gate_rule``), as a user gets them: the slurm pack registered as a real distribution on
sys.path, a real ``--host local`` audit and a real audit over a loopback sshd. Its findings are
judged by ``[tool.rentcheck.audit]`` like the RC3xx rules; a broken rule is named and skipped."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

from sshdkit import SshLab

from tests.conftest import run_subprocess

PACK_INFO = "Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n"


def _site(tmp_path: Path, packs: dict[str, str]) -> dict[str, str]:
    """A site directory holding one dist-info per pack (entry point NAME = VALUE), as pip
    leaves it; the environment that puts it (and this interpreter's path) on sys.path."""
    site = tmp_path / "site"
    site.mkdir(exist_ok=True)
    for name, value in packs.items():
        info = site / f"{name}-0.1.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(PACK_INFO.format(name=name))
        (info / "entry_points.txt").write_text(f"[rentcheck.rules]\n{name} = {value}\n")
    return {"PYTHONPATH": f"{site}:{':'.join(sys.path)}"}


def _audit(env: dict[str, str], cwd: Path, *args: str) -> tuple[int, dict[str, object], str]:
    proc = run_subprocess(
        "audit", "--no-expect-gpu", "--output-format", "json", *args, cwd=cwd, env=env
    )
    assert proc.returncode in (0, 1), proc.stdout + proc.stderr
    return proc.returncode, json.loads(proc.stdout), proc.stderr


def _codes(doc: dict[str, object]) -> dict[str, list[dict[str, object]]]:
    found: dict[str, list[dict[str, object]]] = {}
    for result in doc["results"]:  # type: ignore[attr-defined]
        found.setdefault(result["code"], []).append(result)
    return found


def test_box_and_gate_rules_run_in_a_local_audit(tmp_path: Path) -> None:
    env = _site(tmp_path, {"slurm": "rentcheck_slurm:CHECKS"})
    ckpt = tmp_path / "ckpt"
    ckpt.mkdir()
    code, doc, err = _audit(env, tmp_path, "--host", "local", "--path", f"checkpoint={ckpt}")
    found = _codes(doc)
    # The checkpoint directory is on this machine's own disk (ext4/xfs/overlay/tmpfs).
    assert code == 1 and "SLR101" in found, doc
    (hit,) = found["SLR101"]
    assert hit["host"] == "local" and f"checkpoint={ckpt} is on " in str(hit["message"])
    assert "SLR102" not in found and "warning" not in err  # a checkpoint path was measured
    # The gate rule reads the audit's outcome: no checkpoint role measured -> a note.
    code, doc, _ = _audit(env, tmp_path, "--host", "local", "--path", f"data={ckpt}")
    found = _codes(doc)
    assert "SLR101" not in found and [r["severity"] for r in found["SLR102"]] == ["note"]
    assert code == 0  # a note is below the fail level


def test_plugin_box_rules_are_judged_by_the_audit_section(tmp_path: Path) -> None:
    env = _site(tmp_path, {"slurm": "rentcheck_slurm:CHECKS"})
    (tmp_path / "rentcheck.yaml").write_text(
        f"audit:\n  ignore: [SLR101]\n  paths: {{checkpoint: {tmp_path}}}\n"
    )
    code, doc, _ = _audit(env, tmp_path, "--host", "local")
    assert "SLR101" not in _codes(doc)
    (tmp_path / "rentcheck.yaml").write_text(
        f"audit:\n  select: [SLR]\n  paths: {{checkpoint: {tmp_path}}}\n"
    )
    code, doc, _ = _audit(env, tmp_path, "--host", "local")
    assert set(_codes(doc)) == {"SLR101"} and code == 1
    listed = run_subprocess("rules", "--output-format", "json", cwd=tmp_path, env=env)
    origins = {r["code"]: r["origin"] for r in json.loads(listed.stdout)}
    assert origins["SLR101"] == origins["SLR102"] == "plugin slurm (rentcheck_slurm)"


BROKEN = textwrap.dedent(
    """
    from rentcheck import Applicability, Rule, Severity, box_rule, gate_rule

    def rule(code):
        return Rule(
            code=code, name=f"rule-{code.lower()}", summary="A rule that breaks.",
            why="It exists to show that a rule which raises is named and skipped, never "
            "fatal to the audit that runs it.",
            example_bad="x", example_good="y", fix="Fix the plugin.", family="test",
            fix_applicability=Applicability.NONE, default_severity=Severity.ERROR,
        )

    def boom(box):
        raise KeyError("gpu")

    def wrong_code(outcome):
        return [rule("ZZ999").finding("not mine", host=outcome.host)]

    CHECKS = [box_rule(rule("ZZ001"), boom), gate_rule(rule("ZZ002"), wrong_code, gate="audit")]
    """
)


def test_a_rule_that_raises_is_named_and_skipped(tmp_path: Path) -> None:
    env = _site(
        tmp_path, {"zz": "zz_pack:CHECKS", "nogate": "nogate_pack:CHECKS"}
    )  # fmt: skip
    site = Path(env["PYTHONPATH"].split(":")[0])
    (site / "zz_pack.py").write_text(BROKEN)
    (site / "nogate_pack.py").write_text(
        BROKEN.replace("ZZ", "NG").replace('gate="audit"', 'gate="audti"')
    )
    code, doc, err = _audit(env, tmp_path, "--host", "local", "--path", f"data={tmp_path}")
    assert not any(str(c).startswith(("ZZ", "NG")) for c in _codes(doc))
    lines = err.splitlines()
    assert any("rule ZZ001 (plugin zz (zz_pack)) skipped: KeyError: 'gpu'" in x for x in lines)
    assert any("rule ZZ002 (plugin zz (zz_pack)) skipped: TypeError: it returned ZZ999" in x
               for x in lines)  # fmt: skip
    assert any(
        "rule pack 'nogate' (nogate_pack:CHECKS) skipped: TypeError: its rule NG002 applies to "
        "gate 'audti', which does not exist" in x
        for x in lines
    ), err
    assert code == 0  # the audit itself went on


def test_box_rule_over_a_real_sshd(lab: SshLab, tmp_path: Path) -> None:
    env = _site(tmp_path, {"slurm": "rentcheck_slurm:CHECKS"})
    code, doc, _ = _audit(
        env, tmp_path, "--host", "box", "--ssh-config", str(lab.ssh_config),
        "--path", "checkpoint=/dev/shm", "--path", "durable=/proc",
    )  # fmt: skip
    found = _codes(doc)
    (hit,) = found["SLR101"]  # /dev/shm is tmpfs; /proc is proc, not a node-local type
    assert hit["host"] == "box" and "checkpoint=/dev/shm is on tmpfs (/dev/shm)" in str(
        hit["message"]
    )
    assert doc["transport"]["connections"] == 1 and code == 1  # type: ignore[index]
