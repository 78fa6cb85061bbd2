"""``python -m roofline`` runs the CLI."""

from .cli import main

main()
