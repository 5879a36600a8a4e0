"""The lifecycle spine: one table of gates, one judgement of findings, the ledger, the order.

``table`` holds one row per gate; every list of gates elsewhere (the CLI's command index,
the rule registry's gate rules, config sections, pytest options and markers, ``rentcheck
status``) is derived from it. ``judge`` turns a gate's findings into a verdict and an exit
code, the same for the CLI and the pytest items. ``order`` reads the ledger to refuse a gate
whose prerequisites are missing or stale.
"""
