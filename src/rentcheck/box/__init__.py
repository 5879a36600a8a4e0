"""The box gates: reach a rented machine (SSH or local), probe it once, judge the facts.

Modules: ``sshconfig`` (alias resolution like OpenSSH), ``knownhosts`` (host key trust),
``connect`` + ``transport`` (one connection, server-side timeouts), ``probe`` (the stdlib
program sent over stdin), ``facts`` (one exec round trip), ``audit``/``durable``/``gpu``/
``mutation`` (pure rules), ``push`` (install by rename), ``runner`` and ``pytest_gate``.
Importing this package imports nothing heavy; paramiko is loaded only to connect.
"""
