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


def test_a_label_faces_the_plot_centre():
    implicit, _ = PARETO_MODES
    plot = pareto_plot([record("a:right", implicit, 98.0, 50.0), record("b:left", implicit, 5.0, 50.0)])
    side = {point["model"]: point["label_right"] for point in plot["points"]}
    assert side == {"a:right": False, "b:left": True}


def test_the_rendered_label_is_the_key_not_the_spec():
    implicit, explicit = PARETO_MODES
    plot = pareto_plot([record(LONG_SPEC, implicit, 90.0, 40.0), record(LONG_SPEC, explicit, 95.0, 60.0)])
    html = template_environment().get_template("personalization/_pareto.html.j2").render(ctx={"pareto": plot})
    assert ">M1</text>" in html and f">{LONG_SPEC}</text>" not in html
    assert f"M1 = {LONG_SPEC}" in html
