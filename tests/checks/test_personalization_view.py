"""The Pareto plot's geometry (BASIS-Bench Figure 2): model keys instead of specs beside the points."""

from types import SimpleNamespace

from harness.checks.personalization.view import pareto_plot
from harness.core.modes import PARETO_MODES
from harness.report import template_environment

LONG_SPEC = "cascade:whisper:tiny.en+voice:praat+smollm2:135m-instruct"


def record(model: str, mode: str, icat: float, accuracy: float, dimension: str = "gender") -> SimpleNamespace:
    return SimpleNamespace(
        model=model, dimension=dimension, variant=mode, stereotype_icat=icat, value=accuracy, passed=True
    )


def test_points_carry_a_short_model_key_spelled_out_below_the_plot():
    implicit, explicit = PARETO_MODES
    plot = pareto_plot(
        [
            record(LONG_SPEC, implicit, 90.0, 40.0),
            record(LONG_SPEC, explicit, 95.0, 60.0),
            record("sim:fair", implicit, 20.0, 80.0),
        ]
    )
    keys = {point["model"]: point["key"] for point in plot["points"]}
    assert keys == {LONG_SPEC: "M1", "sim:fair": "M2"}
    assert plot["model_keys"] == [{"key": "M1", "model": LONG_SPEC}, {"key": "M2", "model": "sim:fair"}]


def test_labels_stand_in_a_column_right_of_the_plot_apart_even_where_points_coincide():
    implicit, _ = PARETO_MODES
    plot = pareto_plot([record(f"m{index}:same", implicit, 50.0, 50.0) for index in range(3)])
    assert all(label["y"] > legend["y"] for label in plot["labels"] for legend in plot["legend"])
    heights = [label["y"] for label in plot["labels"]]
    assert plot["label_x"] > plot["right_x"] and heights == sorted(heights)
    assert all(lower - upper >= 14 for upper, lower in zip(heights, heights[1:]))
    assert plot["height"] >= heights[-1]


def test_the_rendered_label_is_the_key_not_the_spec():
    implicit, explicit = PARETO_MODES
    plot = pareto_plot([record(LONG_SPEC, implicit, 90.0, 40.0), record(LONG_SPEC, explicit, 95.0, 60.0)])
    html = template_environment().get_template("personalization/_pareto.html.j2").render(ctx={"pareto": plot})
    assert ">M1 · gender: ICAT 90.0, accuracy 40.0</text>" in html and f">{LONG_SPEC}</text>" not in html
    assert f"M1 = {LONG_SPEC}" in html
