"""Rooms of the classic area."""
