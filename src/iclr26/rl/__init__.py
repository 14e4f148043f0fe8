"""Rooms of the rl area."""
