"""Rooms of the generative area."""
