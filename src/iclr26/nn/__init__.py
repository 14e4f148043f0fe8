"""Rooms of the nn area."""
