"""Types and helpers that every layer of the harness shares, one module per concern; none imports another
harness package.

- :mod:`.requests`: audio, a generation request, decoding parameters;
- :mod:`.answers`: the answer forms a request may declare, and the statuses of an extracted answer;
- :mod:`.errors`: the errors every layer raises;
- :mod:`.modes`: the BASIS-Bench evaluation modes;
- :mod:`.files`: atomic writes and file locks;
- :mod:`.redaction`: secrets kept out of every output;
- :mod:`.values`: small helpers (JSON-safe floats, stable hashes and seeds, memos).
"""
