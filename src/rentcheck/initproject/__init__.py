"""What ``rentcheck init`` reads from a project (never runs): its training entrypoints, ranked
with the reasons (``entrypoints.py``), and the flags, checkpoint directory and untracked data
the chosen one uses (``flags.py``)."""
