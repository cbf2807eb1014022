"""The refusal-gap check: an example of a check in a package of its own (docs/extending.md)."""
