"""Rooms of the vision area."""
