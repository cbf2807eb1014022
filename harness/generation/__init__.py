"""How a model's outputs come to be, in a run and on the nightly path.

- :mod:`~harness.generation.cached_model`: :class:`CachedModel`, a model spec behind the run's output cache (every
  answer of a gate run goes through it);
- :mod:`~harness.generation.request_plan`: under ``--plan``, the requests the cache lacks, written as a plan instead
  of generated;
- :mod:`~harness.generation.fill_plan`: ``lalm-fairness-generate``, which fills a plan with the project's backends;
- :mod:`~harness.generation.ray_fill`: the same fill on a Ray cluster (``--ray``);
- :mod:`~harness.generation.embedding_rows`: both fills' answers to a plan's embedding rows.

Nothing is imported here, so that a run that only reads the cache loads neither Parquet nor Ray.
"""
