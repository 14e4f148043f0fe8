"""Metrics shared by two or more papers."""
