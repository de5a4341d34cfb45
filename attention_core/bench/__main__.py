"""``python -m attention_core.bench`` runs the command-line benchmark."""

from .cli import main

raise SystemExit(main())
