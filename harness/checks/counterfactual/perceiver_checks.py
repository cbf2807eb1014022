"""The counterfactual check's perceiver requirements and rows (issues 58, 61): the perceiver must tell the groups of
the original recordings, hear the swap's target group and the sham as its source group; each raises
:class:`~harness.core.errors.CaseNotMeasured` with its reason, and the perceived shares become the record's rows.
(Here, not in :mod:`harness.perception`, whose source is the perceiver's fingerprint.)"""

from __future__ import annotations

from collections.abc import Sequence

from harness.checks.case import Case
from harness.checks.context import CheckContext
from harness.checks.counterfactual.record import PerceivedRow, ShamHeardRow
from harness.checks.counterfactual.tables import arms_of
from harness.core.errors import CaseNotMeasured
from harness.data.voice_transforms import VoiceTransformError
from harness.metrics.perceiver_fit import MIN_MARGIN_OVER_CHANCE, PerceiverCalibration
from harness.perception import VOICE_FORMANTS, VOICE_PRAAT, VOICE_PRAAT_GROUPS, PerceivedFilter

INACCURATE_REASON = "the perceiver cannot tell the groups of the original recordings"


def require_accurate_perceiver(calibration: PerceiverCalibration, case_id: str, perceiver: str) -> None:
    """Raise :class:`CaseNotMeasured` when the perceiver's balanced accuracy on the originals (whose groups are
    known) is below chance + :data:`~harness.metrics.perceiver_fit.MIN_MARGIN_OVER_CHANCE`: its labels of the arms
    would say nothing about the group they are heard as."""
    if calibration.accurate():
        return
    recall = ", ".join(f"{group} {100 * value:.0f}%" for group, value in calibration.recall.items())
    raise CaseNotMeasured(
        f"{case_id}: {INACCURATE_REASON}: {perceiver} labels {100 * calibration.accuracy:.0f}% of them right "
        f"(balanced over groups: {recall}; {calibration.recordings} recordings of {calibration.speakers} speakers; "
        f"{calibration.method}), below chance {100 * calibration.chance:.0f}% + "
        f"{100 * MIN_MARGIN_OVER_CHANCE:.0f} points"
    )


SHAM_CROSSED_REASON = "the sham arm was not heard as the source group"


def require_sham_heard_as_source(result: PerceivedFilter, min_share: float, case_id: str, perceiver: str) -> None:
    """Raise :class:`CaseNotMeasured` naming each direction whose share of sham clips perceived as their own source
    group (``result``: :func:`~harness.perception.perceived_filter` of the sham arm, whose target is its source) is
    below ``min_share`` (thresholds.yaml ``counterfactual.min_sham_source_share``): a sham heard as the other group
    carries the group cue the swap does, so a comparison against it would hide the voice effect it is to reveal.
    (Here, not in :mod:`harness.perception`, whose code names the perceiver's cached features.)"""
    short = [
        f"{source}: {int(row.perceived_as_target)} of {int(row.clips)} ({100 * row.share:.0f}%)"
        for (source, _), row in result.shares.iterrows()
        if row.share < min_share
    ]
    if short:
        raise CaseNotMeasured(
            f"{case_id}: {SHAM_CROSSED_REASON}: {perceiver} heard too few sham clips as their source group "
            f"({'; '.join(short)}; min_sham_source_share {100 * min_share:.0f}%)"
        )


UNHEARD_REASON = "no perceiver of the run can hear the arms' groups"


def perceiver_cannot_hear(perceiver: str, groups: Sequence[str], known: Sequence[str] | None = None) -> str | None:
    """Why ``perceiver`` cannot label clips with ``groups`` (the arms' target groups), or None: ``voice:praat``
    names only the groups of its pitch classes (:data:`harness.perception.VOICE_PRAAT_GROUPS`: male, female, child), so it
    cannot hear age (young, elderly) or accent; ``voice:formants`` names the groups of the originals it is fitted on
    (``known``), any dimension's; a backend perceiver (``--perceiver SPEC``) is asked for the groups themselves and
    may. (Here, not in :mod:`harness.perception`, whose code names voice:praat's cached labels.)"""
    if perceiver == VOICE_FORMANTS and known is not None:
        unheard = [group for group in groups if group not in known]
        if unheard:
            return (
                f"{UNHEARD_REASON}: {VOICE_FORMANTS} is fitted on the original recordings, and none of them is "
                f"{' or '.join(unheard)}"
            )
        return None
    if perceiver != VOICE_PRAAT:
        return None
    known = sorted(set(VOICE_PRAAT_GROUPS.values()))
    unheard = [group for group in groups if group not in known]
    if not unheard:
        return None
    return (
        f"{UNHEARD_REASON}: {VOICE_PRAAT} names a voice only as {', '.join(known)} (by its median F0), so it "
        f"cannot tell whether an arm sounds {' or '.join(unheard)}; give --perceiver SPEC a model that can"
    )


def require_arms_perceivable(context: CheckContext, case: Case) -> None:
    """Raise :class:`CaseNotMeasured` with the cause when the case's arms cannot be made (a group the transform does
    not know, such as an age label other than young or elderly) or the run's perceiver cannot hear their target
    groups (:func:`perceiver_cannot_hear`: ``voice:praat`` hears no age), before any arm is made."""
    try:
        recordings = arms_of(context, case.corpus, case.dimension).recordings
    except VoiceTransformError as exc:
        raise CaseNotMeasured(f"{case.id}: the arms cannot be made: {exc}") from exc
    targets = sorted(set(recordings["target_group"]))
    cause = perceiver_cannot_hear(context.perceiver, targets, sorted(set(recordings["source_group"])))
    if cause is not None:
        raise CaseNotMeasured(f"{case.id}: {cause}")


def perceived_rows(perceived: PerceivedFilter) -> list[PerceivedRow]:
    return [
        PerceivedRow(
            source_group=str(source),
            target_group=str(target),
            clips=int(row.clips),
            perceived_as_target=int(row.perceived_as_target),
            share=float(row.share),
        )
        for (source, target), row in perceived.shares.iterrows()
    ]


def sham_heard_rows(heard: PerceivedFilter) -> list[ShamHeardRow]:
    """Per source group, the sham clips, those the perceiver heard as that same group and their share (0-1)."""
    return [
        ShamHeardRow(source_group=str(source), clips=int(row.clips), heard_as_source=int(row.perceived_as_target),
                     share=float(row.share))
        for (source, _), row in heard.shares.iterrows()
    ]  # fmt: skip


def perceived_words(perceived: PerceivedFilter) -> str:
    return ", ".join(
        f"{source} -> {target} {int(row.perceived_as_target)}/{int(row.clips)}"
        for (source, target), row in perceived.shares.iterrows()
    )
