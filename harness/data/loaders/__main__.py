"""``python -m harness.data.loaders NAME SOURCE OUTPUT``: turn an unpacked corpus into a gate corpus.

Then run the gate on it with ``--corpus NAME=OUTPUT`` (``--basis-suite OUTPUT`` for an item suite such as
spoken-stereoset). The gate also takes ``--corpus NAME=SOURCE`` directly and builds it into its cache folder.
"""

from __future__ import annotations

import argparse
import sys

from harness.data.basis_suite import BasisError
from harness.data.corpus import CorpusError
from harness.data.loaders import LOADERS, build_corpus, produces


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m harness.data.loaders", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("name", choices=sorted(LOADERS))
    parser.add_argument("source", help="where the distribution was unpacked")
    parser.add_argument("output", help="folder for manifest.csv and corpus.yaml (suite.yaml for an item suite)")
    parser.add_argument("--absolute-audio", action="store_true", help="write absolute audio paths")
    args = parser.parse_args(argv)
    try:
        path = build_corpus(args.name, args.source, args.output, relative_audio=not args.absolute_audio)
    except (CorpusError, BasisError) as exc:  # LoaderError is a CorpusError
        print(f"error: {exc}", file=sys.stderr)
        return 1
    option = "--basis-suite " if produces(args.name) == "suite" else f"--corpus {args.name}="
    print(f"wrote {path}; run the gate with {option}{path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
