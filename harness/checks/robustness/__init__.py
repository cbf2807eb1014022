"""BASIS-Bench demographic robustness: ASR and spoken QA by group (BASIS-Bench §3.1)."""
