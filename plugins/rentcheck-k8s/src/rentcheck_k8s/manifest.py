"""The parts of Kubernetes manifests the K8S rules read, from YAML text. Pure: text in, data out."""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import yaml

__all__ = ["Container", "Workload", "checkpoint_paths", "workloads"]

CKPT_FLAG_RE = re.compile(r"^--?(ckpt|checkpoint|save|output)[-_]?(dir|path|root)$", re.I)
CKPT_ENV_RE = re.compile(r"^(CKPT|CHECKPOINT|SAVE)S?_?(DIR|PATH|ROOT)$", re.I)
ANNOTATION = "rentcheck.dev/checkpoint-seconds"


@dataclass(frozen=True)
class Container:
    name: str
    spec: dict[str, Any]


@dataclass(frozen=True)
class Workload:
    kind: str  # Pod, Job or CronJob
    name: str
    first_line: int  # 1-based line where the document starts
    last_line: int
    pod: dict[str, Any]  # the pod spec
    job: dict[str, Any] | None  # the Job spec (None for a bare Pod)
    annotations: dict[str, Any]

    def containers(self) -> list[Container]:
        found = []
        for key in ("initContainers", "containers"):
            for spec in self.pod.get(key) or []:
                if isinstance(spec, dict):
                    found.append(Container(str(spec.get("name", "?")), spec))
        return found


def _mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _documents(text: str) -> Iterator[tuple[int, int, Any]]:
    """(first line, last line, data) of each YAML document, as yaml.safe_load_all reads them."""
    loader = yaml.SafeLoader(text)
    try:
        while loader.check_node():
            node = loader.get_node()
            if node is None:
                continue
            data = loader.construct_document(node)
            yield node.start_mark.line + 1, node.end_mark.line + 1, data
    finally:
        loader.dispose()


def workloads(text: str) -> Iterator[Workload]:
    """Each Pod, Job and CronJob of a manifest; a file that is not valid YAML yields none."""
    try:
        documents = list(_documents(text))
    except yaml.YAMLError:
        return
    for first, last, data in documents:
        doc = _mapping(data)
        kind = doc.get("kind")
        meta = _mapping(doc.get("metadata"))
        spec = _mapping(doc.get("spec"))
        template_meta: dict[str, Any] = {}
        job: dict[str, Any] | None = None
        if kind == "Pod":
            pod = spec
        elif kind in ("Job", "CronJob"):
            job = spec
            if kind == "CronJob":
                job = _mapping(_mapping(spec.get("jobTemplate")).get("spec"))
            template = _mapping(job.get("template"))
            pod, template_meta = _mapping(template.get("spec")), _mapping(template.get("metadata"))
        else:
            continue
        annotations = _mapping(meta.get("annotations")) | _mapping(template_meta.get("annotations"))
        name = str(meta.get("name", "?"))
        yield Workload(str(kind), name, first, last, pod, job, annotations)


def _words(container: Container) -> list[str]:
    words: list[str] = []
    for key in ("command", "args"):
        for item in container.spec.get(key) or []:
            text = str(item)
            try:
                words.extend(shlex.split(text) if " " in text else [text])
            except ValueError:
                words.extend(text.split())
    return words


def checkpoint_paths(container: Container) -> list[str]:
    """Checkpoint directories a container names in its args/command or env."""
    found: list[str] = []
    words = _words(container)
    for i, word in enumerate(words):
        flag, eq, value = word.partition("=")
        if not eq:
            value = words[i + 1] if i + 1 < len(words) else ""
        if CKPT_FLAG_RE.match(flag) and value.startswith("/"):
            found.append(value)
    for item in container.spec.get("env") or []:
        env = _mapping(item)
        env_value = str(env.get("value") or "")
        if CKPT_ENV_RE.match(str(env.get("name", ""))) and env_value.startswith("/"):
            found.append(env_value)
    return found


def mount_for(container: Container, path: str) -> dict[str, Any] | None:
    """The volumeMount whose mountPath holds ``path`` (the deepest one), or None."""
    best: dict[str, Any] | None = None
    for item in container.spec.get("volumeMounts") or []:
        mount = _mapping(item)
        root = str(mount.get("mountPath", "")).rstrip("/")
        holds = bool(root) and (path == root or path.startswith(root + "/"))
        if holds and (best is None or len(root) > len(str(best["mountPath"]).rstrip("/"))):
            best = mount
    return best


def volume(workload: Workload, name: str) -> dict[str, Any]:
    for item in workload.pod.get("volumes") or []:
        entry = _mapping(item)
        if entry.get("name") == name:
            return entry
    return {}


def line_of(text: str, workload: Workload, needle: str) -> int:
    """The first line of the workload's document that contains ``needle`` (else its first)."""
    lines = text.splitlines()
    for number in range(workload.first_line, workload.last_line + 1):
        if needle in lines[number - 1]:
            return number
    return workload.first_line
