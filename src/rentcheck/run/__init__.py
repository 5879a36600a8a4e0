"""The smoke and resume gates: run the real training entrypoint on CPU and judge it.

``smoke`` runs it for a few optimizer steps and classifies failures; ``resume`` kills it between
checkpoints and during a checkpoint write, relaunches the identical command and compares steps,
losses and final weights with an uninterrupted run. Both supervise the run (``process``) and, in
Python programs, see inside it through a ``sitecustomize`` step shim (``shim/``).

Nothing here is imported by ``rentcheck.cli`` or the pytest plugin until a gate runs.
"""
