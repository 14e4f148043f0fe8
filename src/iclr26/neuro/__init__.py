"""Rooms of the neuro area."""
