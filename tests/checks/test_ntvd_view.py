"""Figure 4's panel (nTVD against tau) widens to the longest model spec written beside its line."""

from harness.checks.ntvd.view import LABEL_CHAR_WIDTH, tau_figures

from support.records import case, typed

LONG_SPEC = "cascade:whisper:tiny.en+voice:praat+smollm2:135m-instruct"


def figure_for(*models: str) -> dict:
    records = typed(*(case(model=model, tau_sensitivity={"1": 30.0, "10": 12.0, "40": 5.0}) for model in models))
    (figure,) = tau_figures(records)
    return figure


def test_the_panel_has_room_for_a_long_spec():
    figure = figure_for(LONG_SPEC, "sim:fair")
    assert figure["label_room"] >= 10 + LABEL_CHAR_WIDTH * len(LONG_SPEC)
    assert [line["model"] for line in figure["lines"]] == sorted([LONG_SPEC, "sim:fair"])


def test_a_short_spec_keeps_a_narrow_panel():
    assert figure_for("sim:fair")["label_room"] < figure_for(LONG_SPEC)["label_room"]
