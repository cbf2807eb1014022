"""What the four BASIS-Bench checks share: requests of the four modes, judges, answer tables, the crossed
speaker x item test, the mode-record fields and the view helpers (Table 7, group and effect plots)."""
