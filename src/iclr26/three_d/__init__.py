"""Rooms of the three_d area."""
