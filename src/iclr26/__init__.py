"""iclr26: reference implementations of ICLR 2026 methods with executable claim checks."""

__version__ = "0.1.0"
