"""``python -m roofline`` runs the CLI."""

from roofline.views.cli import main

main()
