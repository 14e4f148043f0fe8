"""The polyadic tasks of this room, re-exported from :mod:`iclr26.data.polyadic`."""

from iclr26.data.polyadic import TYPE_F, TYPE_G, TYPE_QUERY, function_composition, match3

__all__ = ["TYPE_F", "TYPE_G", "TYPE_QUERY", "function_composition", "match3"]
