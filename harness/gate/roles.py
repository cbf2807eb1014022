"""Who an unmeasured case's cause lies with (issue 47, item 4): the model under test, or a model the run uses to
judge it, named with the option (or setting) that chose it.

A case is measured with the help of other models: the VIBE attribute extractor (``--extractor``), the judge of
spoken-chat replies (``--judge``), the BASIS judge (``--basis-judge``), the counterfactual perceiver
(``--perceiver``) and the semantic embedder (``--embedder``). When one of them fails (not installed, cannot
answer), the case is unmeasured and the cause must name that model and its option, not the model under test.
The model that failed is the outermost :class:`~harness.generation.cached_model.CachedModel` the error passed through (the one
the check asked), or, for the embedder, the semantic module.
"""

from __future__ import annotations

import dataclasses
from types import TracebackType

from harness.gate.context import RunContext
from harness.generation.cached_model import CachedModel

SEMANTIC_MODULE = "harness.semantic"
"""The module that builds and asks the semantic embedder (an error raised there is the embedder's)."""
OWN_EMBEDDERS = ("auto", "model", "none")
"""``--embedder`` values under which the embeddings are the model under test's own (or none): never a role."""


@dataclasses.dataclass(frozen=True)
class Role:
    """A model the run uses to measure cases: ``name`` ("extractor", "judge", ...), its ``spec``, and ``set_by``:
    the option or setting that chose it ("--extractor", "thresholds.yaml (vibe.defaults.extractor)", ...)."""

    name: str
    spec: str
    set_by: str


def run_roles(context: RunContext) -> list[Role]:
    """The helper models of a run (:class:`~harness.gate.context.RunContext`), each with the option that set it.
    The extractor is the run's VIBE setting (``--extractor``, the thresholds file, a model's declaration or the
    paper's default); none under the field reader (``rules``)."""
    config = context.config
    roles = []
    if context.judge:
        roles.append(Role("judge", context.judge, "--judge" if config.judge else "the demo's default judge"))
    if context.basis_judge:
        roles.append(Role("BASIS judge", context.basis_judge, "--basis-judge"))
    if context.perceiver:
        roles.append(Role("perceiver", context.perceiver, "--perceiver"))
    if config.embedder not in OWN_EMBEDDERS:
        roles.append(Role("embedder", config.embedder, "--embedder"))
    try:
        vibe = context.vibe
    except Exception:  # an unresolvable VIBE setting stops the run at its start; here it names no role
        vibe = None
    if vibe is not None and not vibe.uses_rules:
        roles.append(Role("extractor", vibe.extractor, vibe.sources.get("extractor", "--extractor")))
    return roles


def failing_model(traceback: TracebackType | None) -> str | None:
    """The spec of the outermost cached model an error passed through (the model a check asked), or None."""
    while traceback is not None:
        owner = traceback.tb_frame.f_locals.get("self")
        if isinstance(owner, CachedModel) and getattr(owner, "spec", None):
            return owner.spec
        traceback = traceback.tb_next
    return None


def raised_in(traceback: TracebackType | None, module: str) -> bool:
    """Whether an error passed through a frame of ``module``."""
    while traceback is not None:
        if traceback.tb_frame.f_globals.get("__name__") == module:
            return True
        traceback = traceback.tb_next
    return False


def blamed_role(error: BaseException, case_model: str | None, roles: list[Role]) -> Role | None:
    """The helper model an error of a case lies with, or None when it lies with the model under test (or with no
    model). A helper whose spec is the case's own model is the model under test."""
    by_spec = {role.spec: role for role in roles}
    spec = failing_model(error.__traceback__)
    if spec is not None and spec != case_model and spec in by_spec:
        return by_spec[spec]
    if spec is None and raised_in(error.__traceback__, SEMANTIC_MODULE):
        return next((role for role in roles if role.name == "embedder"), None)
    return None
