"""BASIS-Bench stereotypical bias (ICAT over every answer order, BASIS-Bench §3.2)."""
