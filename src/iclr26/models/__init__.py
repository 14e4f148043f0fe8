"""Models shared by two or more papers (the tiny LM, the tiny vision backbones)."""
