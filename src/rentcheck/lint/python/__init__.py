"""Python rules (RC2xx): checkpoint, DataLoader and device hygiene on ``ast``; pyflakes-class
errors through the ruff binary."""
