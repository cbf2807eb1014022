"""Figure 4's panel (nTVD against tau): a long spec beside its line is a key, spelled out under the panel; the
panel widens to the longest name; the nTVD axis has ticks."""

from harness.checks.ntvd.view import LABEL_CHAR_WIDTH, tau_figures

from support.records import case, typed

LONG_SPEC = "cascade:whisper:tiny.en+voice:praat+smollm2:135m-instruct"


def figure_for(*models: str) -> dict:
    records = typed(*(case(model=model, tau_sensitivity={"1": 30.0, "10": 12.0, "40": 5.0}) for model in models))
    (figure,) = tau_figures(records)
    return figure


def test_a_long_spec_is_a_key_and_the_panel_has_room_for_the_longest_name():
    figure = figure_for(LONG_SPEC, "sim:fair")
    assert [line["model"] for line in figure["lines"]] == sorted([LONG_SPEC, "sim:fair"])
    assert [line["name"] for line in figure["lines"]] == ["M1", "M2"]
    assert figure["keys"] == [{"key": "M1", "model": LONG_SPEC}, {"key": "M2", "model": "sim:fair"}]
    assert figure["label_room"] >= 10 + LABEL_CHAR_WIDTH * len("M1")


def test_short_specs_are_written_in_full_and_widen_the_panel():
    figure = figure_for("sim:fair", "sim:biased")
    assert [line["name"] for line in figure["lines"]] == ["sim:biased", "sim:fair"] and figure["keys"] == []
    assert figure["label_room"] >= 10 + LABEL_CHAR_WIDTH * len("sim:biased")


def test_the_ntvd_axis_has_ticks_from_0_to_its_top():
    figure = figure_for("sim:fair")
    labels = [tick["label"] for tick in figure["y_ticks"]]
    assert labels[0] == "0" and labels[-1] == f"{figure['y_max']:g}" and len(labels) == 5
