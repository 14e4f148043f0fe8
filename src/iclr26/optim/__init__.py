"""Rooms of the optim area."""
