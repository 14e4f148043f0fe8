"""Rooms of the llm area."""
