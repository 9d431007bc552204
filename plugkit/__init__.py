"""plugkit shared kernel. Kept import-free: the client's hot path imports this package."""

__version__ = "0.1.0"
SERVICE = "plugkit-runner"
