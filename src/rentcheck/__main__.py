"""``python -m rentcheck``."""

from rentcheck.cli import main

raise SystemExit(main())
