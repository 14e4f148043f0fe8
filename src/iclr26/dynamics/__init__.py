"""Rooms of the dynamics area."""
