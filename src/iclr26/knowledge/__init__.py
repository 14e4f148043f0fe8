"""Rooms of the knowledge area."""
