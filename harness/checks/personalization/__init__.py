"""BASIS-Bench personalization (BASIS-Bench §3.3)."""
