"""Platform hooks: `plugkit hook <Event> --platform P` (core.py) and one adapter per platform."""
