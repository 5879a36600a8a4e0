"""Pull gate: build a manifest on the box, then verify the pulled copy against it.

The remote half is ``manifest_builder`` (one stdlib-only module that can be sent over SSH and run
with ``python3 -I -S``). The local half is ``manifest`` (hostile-input manifest parser),
``verify`` (one read pass per file: digest, structure, pickle safety, NaN/Inf) and ``marker``
(``PULL_VERIFIED.json``). Rule metadata for every outcome lives in ``rules``.
"""
