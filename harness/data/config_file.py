"""Reading a corpus's or suite's YAML configuration file: a mapping whose keys are all known."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import yaml


def read_config_mapping(config_path: Path, valid_keys: Sequence[str], error: type[Exception], expected: str) -> dict:
    """The YAML mapping in ``config_path`` (an empty file reads as ``{}``); raises ``error`` naming the file when
    it is not valid YAML, not a mapping (``expected`` says what it should be), or has a key not in
    ``valid_keys``."""
    try:
        config = yaml.safe_load(config_path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as exc:
        raise error(f"{config_path}: not valid YAML ({exc})") from exc
    if not isinstance(config, dict):
        raise error(f"{config_path}: expected {expected}")
    unknown = sorted(set(config) - set(valid_keys))
    if unknown:
        raise error(f"{config_path}: unknown key(s) {unknown}; valid: {', '.join(valid_keys)}")
    return config
