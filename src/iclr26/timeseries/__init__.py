"""Rooms of the timeseries area."""
