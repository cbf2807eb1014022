"""``python -m harness.data.loaders NAME SOURCE OUTPUT``: turn an unpacked corpus into a gate corpus.

Then run the gate on it with ``--corpus NAME=OUTPUT``.
"""

from __future__ import annotations

import argparse
import sys

from harness.data.loaders import LOADERS, LoaderError, build_corpus


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness.data.loaders", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("name", choices=sorted(LOADERS))
    parser.add_argument("source", help="where the distribution was unpacked")
    parser.add_argument("output", help="folder for manifest.csv and corpus.yaml")
    parser.add_argument("--absolute-audio", action="store_true", help="write absolute audio paths")
    args = parser.parse_args(argv)
    try:
        path = build_corpus(args.name, args.source, args.output, relative_audio=not args.absolute_audio)
    except LoaderError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"wrote {path}; run the gate with --corpus {args.name}={path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
