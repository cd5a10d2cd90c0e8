"""``python -m wireproto``."""

from wireproto.cli import main

main()
