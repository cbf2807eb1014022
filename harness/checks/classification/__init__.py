"""BASIS-Bench demographic classification (BASIS-Bench §3.1)."""
