"""``lalm-fairness-generate``: fill a plan (:mod:`harness.generation.request_plan`) with the project's own backends, into the cache's
export format, for ``--import-cache`` and ``--offline`` re-scoring.

    lalm-fairness-generate --plan PLAN.parquet --out OUTPUTS.jsonl.gz [--shard i/N] [--cache-dir DIR]
                           [--ray ADDRESS|auto [--workers N] [--resources JSON]]

Each model of the plan is built from its row's spec and option block and must have the plan's fingerprint (a
model whose weights, engine or settings differ here would answer other questions: its rows fail, saying both
fingerprints), and each row's request must hash to the row's key here (a row that was edited, or planned by another
version, is refused, naming it: :func:`harness.generation.request_plan.checked_requests`). Requests go through
:class:`~harness.generation.cached_model.CachedModel` over a cache folder (``--cache-dir``, else a temporary one), so each model
loads once and a batch's duplicates are asked once; rows of namespace ``embedding`` ask for the model's own semantic
embedding of a text, computed from the same weights (:func:`harness.generation.embedding_rows.planned_embedding_entries`). After each
model and decoding, every answered row of the plan is written to ``--out`` (atomically). Rerun on the same ``--out``,
it skips the keys already there. It ends with the counts of rows done, failed and left; exit 0 when none failed or
is left, 1 otherwise, 2 for a plan or output that cannot be read, 4 (before anything is written) for an optional
extra this installation lacks: pyarrow for any plan, ray for ``--ray``, a planned model's packages; a plan or output
that cannot be read is the same one ``ERROR:`` line, exit 4 (:mod:`harness.core.tools`).

With ``--ray``, the rows are answered on a Ray cluster through Ray Data (:mod:`harness.generation.ray_fill`): ``--workers``
actors per model, each holding the model's tensor x pipeline parallel degree of GPUs where the cluster has GPUs,
and ``--resources`` (a JSON mapping of custom resources each actor claims).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import textwrap
from collections.abc import Callable, Sequence
from pathlib import Path

from harness.cache import CacheError, OutputCache
from harness.core.errors import ModelError
from harness.core.tools import ToolParser, report_error
from harness.generation.cached_model import CachedModel
from harness.generation.embedding_rows import planned_embedding_entries
from harness.generation.request_plan import (
    EMBEDDING_NAMESPACE,
    FillCounts,
    PlanError,
    PlannedRequest,
    generation_batches,
    model_groups,
    parse_shard,
    read_plan,
    shard,
)
from harness.models import missing_model_packages, missing_packages


def fill(
    rows: Sequence[PlannedRequest],
    out: str | Path,
    cache: OutputCache,
    *,
    progress: bool = True,
    model_factory: Callable[..., CachedModel] = CachedModel,
) -> FillCounts:
    """Answer the ``rows`` that ``out`` does not hold yet, writing ``out`` after each model and decoding."""
    out = Path(out)
    if out.is_file():
        cache.import_file(out)
    planned_keys = [row.key for row in rows]
    counts = FillCounts(planned=len(rows), already=len(cache.lookup(planned_keys)))
    answered = set(cache.lookup(planned_keys))
    for (spec, _, fingerprint), group in model_groups([row for row in rows if row.key not in answered]).items():
        try:
            model = model_factory(spec, cache, group[0].decoding_params(), group[0].option_block(), progress=progress)
        except (ModelError, ValueError) as exc:
            counts.failed += len(group)
            counts.failures.append(f"{spec}: cannot be built here ({exc}); {len(group)} rows failed")
            continue
        if model.fingerprint != fingerprint:
            counts.failed += len(group)
            counts.failures.append(
                f"{spec}: its fingerprint here is {model.fingerprint}, the plan's is {fingerprint} (weights, engine or "
                f"settings differ): {len(group)} rows failed"
            )
            continue
        embedding_rows = [row for row in group if row.namespace == EMBEDDING_NAMESPACE]
        if embedding_rows:
            try:
                entries, refused = planned_embedding_entries(model, embedding_rows)
            except ModelError as exc:
                entries, refused = [], []
                counts.failures.append(f"{spec}: {exc}")
            cache.put_many(entries)
            counts.failures += [refusal.reason for refusal in refused]
            done = set(cache.lookup([row.key for row in embedding_rows]))
            counts.generated += len(done)
            counts.failed += len(embedding_rows) - len(done)
            cache.export(out, set(cache.lookup(planned_keys)))
        for decoding, decoding_rows, checked in generation_batches(group, model.keys):
            counts.failed += len(checked.refused)
            counts.failures += [refusal.reason for refusal in checked.refused]
            if not checked.rows:
                continue
            try:
                model.generate(list(checked.requests), label=decoding_rows[0].label, decoding=decoding)
            except ModelError as exc:
                counts.failures.append(f"{spec}: {exc}")
            done = set(cache.lookup([row.key for row in checked.rows]))
            counts.generated += len(done)
            counts.failed += len(checked.rows) - len(done)
            cache.export(out, set(cache.lookup(planned_keys)))
        model.release()
    return counts


HELP = """Fill a plan written by `pytest ... --plan PLAN` with the project's own backends, into a cache export
(JSON lines, gzip) that the gate reads with --import-cache FILE --offline.

Each model of the plan is built from its row's spec and option block and must have the plan's fingerprint; each
row's request must hash to the row's key (an edited row, or one planned by another version, is refused, naming
it). Answers are written to --out after each model and decoding; rerun on the same --out to skip the keys it
already holds. With --ray, the rows are answered on a Ray cluster through Ray Data: --workers actors per model,
each claiming the model's GPUs and the --resources given."""

EPILOG = """exit status: 0 every row answered; 1 some row failed or is left; 4 a setup problem, one ERROR line (a
plan or output that cannot be read, an optional extra this installation lacks: pyarrow for any plan, ray[data]
for --ray, the packages of the plan's models).

For example, on a Ray cluster this machine joined (`ray start --address HEAD:6379`):

  lalm-fairness-generate --plan plan.parquet --out round1.jsonl.gz --ray auto --workers 2"""

HELP_WIDTH = 79


def paragraphs(text: str) -> str:
    """``text``'s paragraphs, each filled to :data:`HELP_WIDTH` columns (argparse keeps the blank lines between); an
    indented one (a command) is kept as it is."""
    return "\n\n".join(
        part if part.startswith(" ") else textwrap.fill(" ".join(part.split()), HELP_WIDTH)
        for part in text.split("\n\n")
    )


TOOL = "lalm-fairness-generate"


def missing_extras(args: argparse.Namespace, rows: Sequence[PlannedRequest] | None = None) -> str | None:
    """What this installation lacks for the fill (issue 47, item 5), or None: pyarrow to read any plan
    (``[plan]``), ray to fill with ``--ray`` (``[ray]``), and each planned model's backend extra
    (:func:`harness.models.missing_model_packages`). Asked before the plan is read (``rows`` None) and once it is."""
    if rows is None:
        if missing_packages(["pyarrow"]):
            return f"--plan {args.plan}: a plan is a Parquet file and pyarrow is not installed: pip install 'lalm-fairness[plan]'"
        if args.ray and missing_packages(["ray"]):
            return f"--ray {args.ray}: ray is not installed: pip install 'lalm-fairness[ray]'"
        return None
    for spec in dict.fromkeys(row.spec for row in rows):
        reason = missing_model_packages(spec)
        if reason:
            return f"{args.plan}: the plan's model {spec}: {reason}"
    return None


def main(argv: Sequence[str] | None = None) -> int:
    parser = ToolParser(
        prog=TOOL,
        description=paragraphs(HELP),
        epilog=paragraphs(EPILOG),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--plan", required=True, metavar="PATH", help="a plan written by pytest ... --plan PATH")
    parser.add_argument("--out", required=True, metavar="FILE", help="the cache export to write (JSONL.gz)")
    parser.add_argument("--shard", default=None, metavar="i/N", help="fill only the i-th of N disjoint parts")
    parser.add_argument("--cache-dir", default=None, metavar="DIR", help="the output cache to generate through")
    parser.add_argument("--no-progress", action="store_true", help="no progress bars")
    parser.add_argument(
        "--ray",
        default=None,
        metavar="ADDRESS",
        help="fill on a Ray cluster: its head's address (HOST:6379), or auto for the cluster this machine joined "
        "with `ray start`",
    )
    parser.add_argument("--workers", type=int, default=1, metavar="N", help="with --ray: actors per model (default 1)")
    parser.add_argument("--resources", default=None, metavar="JSON", help="with --ray: custom resources per actor")
    args = parser.parse_args(argv)
    missing = missing_extras(args)
    if missing:
        return report_error(TOOL, missing)
    try:
        rows = read_plan(args.plan)
        if args.shard:
            rows = shard(rows, *parse_shard(args.shard))
    except (PlanError, ValueError) as exc:
        return report_error(TOOL, exc)
    missing = missing_extras(args, rows)
    if missing:
        return report_error(TOOL, missing)
    with tempfile.TemporaryDirectory(prefix="lalm-generate-") as scratch:
        cache = OutputCache(args.cache_dir or scratch)
        try:
            if args.ray:
                from harness.generation.ray_fill import fill_on_ray

                resources = json.loads(args.resources) if args.resources else {}
                counts = fill_on_ray(rows, args.out, cache, address=args.ray, workers=args.workers, resources=resources)
            else:
                counts = fill(rows, args.out, cache, progress=not args.no_progress)
        except (CacheError, PlanError, ValueError) as exc:
            return report_error(TOOL, exc)
        finally:
            cache.close()
    for failure in counts.failures:
        print(f"lalm-fairness-generate: failed: {failure}", file=sys.stderr)
    print(f"lalm-fairness-generate: {args.out}: {counts.line()}")
    return 0 if counts.failed == 0 and counts.left == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
