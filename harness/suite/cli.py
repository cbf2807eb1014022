"""``lalm-fairness-suite build``: build a spoken suite from text items and TTS voices (issue 49, BASIS-Bench §3.3).

Exit status: 0 built; 1 built, but the filters left a group with fewer than 2 voices (nothing loadable written; the
build report says which), or refused before any clip is made: a dimension whose voice bank determines its group (one
``ERROR:`` line naming the cells; ``--allow-engine-confound`` builds it and names it on every gate run); 4 bad input (an item file, a voice spec, a group label, a missing synthesiser, model or
extra, a non-empty ``--out`` no build made without ``--force``: one ``ERROR:`` line naming the file and row, the
spec and the packages it lacks, or the folder, before any clip is made); 2 interrupted (the clips made so far are kept, and the
next build goes on from them).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from harness.core.tools import EXIT_INTERRUPTED, ToolParser, report_error
from harness.suite.build import LAYOUTS, Filters, build_suite, check_out_folder
from harness.suite.errors import SuiteError
from harness.suite.filters import DEFAULT_ASR, DEFAULT_MIN_SHARE, DEFAULT_PERCEIVER, spec_perceiver, spec_transcriber
from harness.suite.spread import ALLOW_OPTION, EngineConfoundError
from harness.suite.voices import read_voices

PROG = "lalm-fairness-suite"


def parser() -> argparse.ArgumentParser:
    top = ToolParser(prog=PROG, description="Build spoken suites from text items and TTS voices.")
    commands = top.add_subparsers(dest="command", required=True)
    build = commands.add_parser(
        "build",
        help="read items with voices of known groups, admit clips by the BASIS filters, write a corpus or BASIS suite",
        description="Read every text item with every voice, admit the clips past the BASIS-Bench filters (WER = 0, "
        "perceived group, outliers listed), and write a corpus (--corpus NAME=DIR) or a BASIS suite (--basis-suite DIR) "
        "with provenance.json and build-report.txt. Exit 0 built, 1 a group left with fewer than 2 voices (nothing "
        "loadable written) or a dimension whose voice bank determines its group, 4 bad input (one ERROR: line), 2 interrupted (run it again to go on).",
    )
    build.add_argument(
        "--items",
        required=True,
        type=Path,
        metavar="FILE",
        help="corpus: a CSV/JSONL with content_id,text; basis: a BASIS suite folder (suite.yaml)",
    )
    build.add_argument(
        "--voices",
        required=True,
        metavar="SPEC[,SPEC...]|FILE.yaml",
        help="voice specs BANK:VOICE[SETTINGS]@DIMENSION=LABEL, or a YAML list of {spec:, gender:, ...}",
    )
    build.add_argument("--out", required=True, type=Path, metavar="DIR", help="the suite folder to write")
    build.add_argument(
        "--layout",
        choices=LAYOUTS,
        default="corpus",
        help="corpus (--corpus NAME=DIR) or basis (--basis-suite DIR); default corpus",
    )
    build.add_argument(
        "--asr",
        default=DEFAULT_ASR,
        metavar="SPEC",
        help=f"the WER = 0 filter's ASR (default {DEFAULT_ASR}: needs the [demo] extra, or give --no-wer-filter)",
    )
    build.add_argument(
        "--perceiver",
        default=DEFAULT_PERCEIVER,
        metavar="SPEC",
        help=f"who hears each clip's group (default {DEFAULT_PERCEIVER}, or any model spec)",
    )
    build.add_argument(
        "--dimension", default="gender", help="the dimension the perceiver and outliers look at (default gender)"
    )
    build.add_argument(
        "--min-perceived-share",
        type=float,
        default=DEFAULT_MIN_SHARE,
        metavar="SHARE",
        help=f"a voice's share of clips heard as its group to be kept (default {DEFAULT_MIN_SHARE})",
    )
    build.add_argument("--no-wer-filter", action="store_true", help="admit clips whatever the ASR hears")
    build.add_argument("--no-perceived-filter", action="store_true", help="keep voices whatever the perceiver hears")
    build.add_argument("--no-outliers", action="store_true", help="do not list duration / F0 outliers")
    build.add_argument("--name", help="the corpus's name (default: the folder's)")
    build.add_argument("--description", help="the corpus's description in corpus.yaml")
    build.add_argument(
        "--clip-store", type=Path, metavar="DIR", help="where clips are kept by recipe (default OUT/.suite-build/clips)"
    )
    build.add_argument(
        "--force",
        action="store_true",
        help="build into a non-empty --out that no build made (its files may be replaced)",
    )
    build.add_argument(
        ALLOW_OPTION,
        action="store_true",
        help="build a dimension whose groups are read by banks no other group uses (the engine confound); the suite "
        "records it and every gate run on it names it",
    )
    build.add_argument("--no-progress", action="store_true", help="no progress bars")
    return top


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    with progress_bars(not args.no_progress):
        return run(args)


@contextlib.contextmanager
def progress_bars(shown: bool):
    """``--no-progress`` silences the ASR's and the perceiver's own bars as well as the builder's (the models read
    ``LALM_PROGRESS``); the setting is put back afterwards."""
    previous = os.environ.get("LALM_PROGRESS")
    if not shown:
        os.environ["LALM_PROGRESS"] = "0"
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop("LALM_PROGRESS", None)
        else:
            os.environ["LALM_PROGRESS"] = previous


def run(args: argparse.Namespace) -> int:
    try:
        if not 0 < args.min_perceived_share <= 1:
            raise SuiteError(f"--min-perceived-share {args.min_perceived_share}: give a share above 0 and at most 1")
        check_out_folder(args.out, args.force)
        voices = read_voices(args.voices)
        filters = Filters(perceived=not args.no_perceived_filter, perceiver_spec=args.perceiver,
                          dimension=args.dimension, min_share=args.min_perceived_share, outliers=not args.no_outliers)  # fmt: skip
        if not args.no_wer_filter:
            filters.asr = args.asr
            filters.transcriber, filters.asr_fingerprint = spec_transcriber(args.asr)
        if filters.perceived and args.perceiver != DEFAULT_PERCEIVER:
            filters.perceiver = spec_perceiver(args.perceiver)
        result = build_suite(args.layout, args.items, voices, args.out, filters, name=args.name,
                             description=args.description, store_dir=args.clip_store, progress=not args.no_progress,
                             force=args.force, allow_engine_confound=args.allow_engine_confound)  # fmt: skip
    except EngineConfoundError as exc:
        report_error(PROG, exc)
        return 1
    except SuiteError as exc:
        return report_error(PROG, exc)
    except subprocess.CalledProcessError as exc:
        detail = (exc.stderr or b"").decode(errors="replace").strip().splitlines()
        print(
            f"ERROR: {PROG}: {' '.join(map(str, exc.cmd[:3]))}... failed: {detail[-1] if detail else exc}",
            file=sys.stderr,
        )
        return 1
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted; the clips made so far are kept, run the same command to go on", file=sys.stderr)
        return EXIT_INTERRUPTED
    print("\n".join(result.report))
    if result.problems:
        print(f"{PROG}: nothing loadable written to {args.out}: {'; '.join(result.problems)}", file=sys.stderr)
        return 1
    print(f"{PROG}: wrote {args.out} ({args.layout}); provenance in {args.out / 'provenance.json'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
