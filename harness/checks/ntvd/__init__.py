"""VIBE nTVD (VIBE §II-D): one case per model x task x dimension."""
