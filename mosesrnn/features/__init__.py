"""The feature seam: values per (source, target) pair, and the registry every consumer reads."""
