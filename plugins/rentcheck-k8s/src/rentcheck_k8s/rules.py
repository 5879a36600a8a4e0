"""The KUBE rules: each a ``Rule`` (what the user reads) and a pure check of one manifest file."""

from __future__ import annotations

from collections.abc import Callable, Iterator

from rentcheck import Applicability, Finding, Rule, Severity, SourceFile
from rentcheck_k8s.manifest import (
    ANNOTATION,
    Workload,
    checkpoint_paths,
    line_of,
    mount_for,
    volume,
    workloads,
)

FAMILY = "kubernetes"
DEFAULT_GRACE_SECONDS = 30  # the pod spec's terminationGracePeriodSeconds when unset


CONTAINER_FS = Rule(
    code="KUBE001",
    name="checkpoint-on-container-filesystem",
    summary="A container writes checkpoints to a path no volume is mounted on.",
    why=(
        "Files a container writes outside its volumes live in the container's own writable "
        "layer: when the container crashes or is stopped, the kubelet restarts it with a clean "
        "state from the image, and when the pod goes, the layer goes with it. Every restart "
        "begins again from step zero."
    ),
    example_bad="args: [--checkpoint-dir, /ckpt]   # no volumeMount on /ckpt",
    example_good=(
        "args: [--checkpoint-dir, /ckpt]\nvolumeMounts: [{name: ckpt, mountPath: "
        "/ckpt}]\nvolumes: [{name: ckpt, persistentVolumeClaim: {claimName: train-ckpt}}]"
    ),
    fix="Mount a PersistentVolumeClaim (or other durable volume) on the checkpoint directory.",
    family=FAMILY,
    default_severity=Severity.ERROR,
    fix_applicability=Applicability.NONE,
)
EMPTYDIR_RETRY = Rule(
    code="KUBE002",
    name="job-retry-starts-from-scratch",
    summary=(
        "A Job with `restartPolicy: Never` retries into a new pod, but its checkpoints are on "
        "an emptyDir."
    ),
    why=(
        "With `restartPolicy: Never` the Job controller answers a failed pod by creating a new "
        "one, up to `backoffLimit` times (6 when unset). An emptyDir is created empty with each "
        "pod and deleted when its pod is removed, so every retry finds no checkpoint and trains "
        "from step zero again. (With `OnFailure` the container restarts in the same pod and the "
        "emptyDir survives a crash, but not an eviction.)"
    ),
    example_bad="restartPolicy: Never\nvolumes: [{name: ckpt, emptyDir: {}}]",
    example_good=(
        "restartPolicy: Never\nvolumes: [{name: ckpt, persistentVolumeClaim: {claimName: ckpt}}]"
    ),
    fix=(
        "Keep checkpoints on a PersistentVolumeClaim, or set `backoffLimit: 0` if a retry would "
        "only repeat the same work."
    ),
    family=FAMILY,
    default_severity=Severity.ERROR,
    fix_applicability=Applicability.NONE,
)
SHORT_GRACE = Rule(
    code="KUBE003",
    name="grace-period-shorter-than-checkpoint",
    summary="`terminationGracePeriodSeconds` is shorter than the checkpoint save the pod declares.",
    why=(
        "When a pod is deleted, drained or preempted, each container's main process gets SIGTERM "
        "and, once the grace period (30 seconds when unset) has passed, SIGKILL. A save on "
        "SIGTERM that takes longer than the grace period is killed half-written. The save's "
        f"duration is stated with the pod annotation `{ANNOTATION}`."
    ),
    example_bad=f'annotations: {{{ANNOTATION}: "120"}}\n# terminationGracePeriodSeconds unset (30)',
    example_good=f'annotations: {{{ANNOTATION}: "120"}}\nterminationGracePeriodSeconds: 180',
    fix="Set `terminationGracePeriodSeconds` above the save time, with a margin.",
    family=FAMILY,
    default_severity=Severity.ERROR,
    fix_applicability=Applicability.NONE,
)
UNPINNED = Rule(
    code="KUBE004",
    name="image-not-pinned-by-digest",
    summary="A container image is named by tag (`repo:tag`), not by digest (`repo@sha256:...`).",
    why=(
        "A tag can be moved to another image at any time; a digest names one image's content. A "
        "Job that retries, or is resumed days later, can pull a different image under the same "
        "tag and resume a checkpoint with different code or library versions."
    ),
    example_bad="image: ghcr.io/acme/train:latest",
    example_good="image: ghcr.io/acme/train@sha256:4f1c...e9",
    fix="Reference the image by digest (`docker buildx imagetools inspect IMAGE` prints it).",
    family=FAMILY,
    default_severity=Severity.WARNING,
    fix_applicability=Applicability.NONE,
)
RULES = (CONTAINER_FS, EMPTYDIR_RETRY, SHORT_GRACE, UNPINNED)

Check = Callable[[str, SourceFile, Workload], Iterator[Finding]]


def _finding(rule: Rule, source: SourceFile, line: int, message: str) -> Finding:
    return rule.finding(message, path=source.path, line=line, col=1)


def _container_fs(text: str, source: SourceFile, work: Workload) -> Iterator[Finding]:
    for container in work.containers():
        for path in checkpoint_paths(container):
            if mount_for(container, path) is None:
                yield _finding(
                    CONTAINER_FS,
                    source,
                    line_of(text, work, path),
                    f"{work.kind} {work.name}, container {container.name}: "
                    f"checkpoints to {path}, which is on the container's "
                    "filesystem (no volume mounted there)",
                )


def _emptydir_retry(text: str, source: SourceFile, work: Workload) -> Iterator[Finding]:
    if work.job is None or work.pod.get("restartPolicy") != "Never":
        return
    if work.job.get("backoffLimit", 6) == 0:
        return  # no retries: nothing restarts from scratch
    for container in work.containers():
        for path in checkpoint_paths(container):
            mount = mount_for(container, path)
            if mount is not None and "emptyDir" in volume(work, str(mount.get("name"))):
                yield _finding(
                    EMPTYDIR_RETRY,
                    source,
                    line_of(text, work, path),
                    f"Job {work.name}: checkpoints to {path} on emptyDir "
                    f"{mount.get('name')!r}; each retry is a new pod with an empty "
                    "volume",
                )


def _short_grace(text: str, source: SourceFile, work: Workload) -> Iterator[Finding]:
    declared = str(work.annotations.get(ANNOTATION, "")).strip()
    if not declared.isdigit():
        return
    grace = work.pod.get("terminationGracePeriodSeconds", DEFAULT_GRACE_SECONDS)
    if isinstance(grace, int) and grace < int(declared):
        where = "terminationGracePeriodSeconds" if grace != DEFAULT_GRACE_SECONDS else ANNOTATION
        yield _finding(
            SHORT_GRACE,
            source,
            line_of(text, work, where),
            f"{work.kind} {work.name}: a checkpoint takes {declared}s but the grace "
            f"period is {grace}s",
        )


def _unpinned(text: str, source: SourceFile, work: Workload) -> Iterator[Finding]:
    for container in work.containers():
        image = str(container.spec.get("image", ""))
        if image and "@sha256:" not in image:
            yield _finding(
                UNPINNED,
                source,
                line_of(text, work, image),
                f"container {container.name}: image {image} is not pinned by digest",
            )


def _per_workload(check: Check) -> Callable[[SourceFile], Iterator[Finding]]:
    def run(source: SourceFile) -> Iterator[Finding]:
        text = source.text
        for work in workloads(text):
            yield from check(text, source, work)

    return run


check_container_fs = _per_workload(_container_fs)
check_emptydir_retry = _per_workload(_emptydir_retry)
check_short_grace = _per_workload(_short_grace)
check_unpinned = _per_workload(_unpinned)
