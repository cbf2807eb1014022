"""Model keys for long specs, the one-line decision, and line breaks only at a spec's separators."""

from harness.display.plots import dot_interval_plot, text_width
from harness.display.text import decision_line, key_legend, model_keys
from harness.records import AttributeDistribution, Decision
from harness.report import bar_chart, breakable

LONG_SPEC = "cascade:whisper:tiny.en+voice:praat+smollm2:135m-instruct"


def test_long_specs_become_keys_in_order_of_first_appearance_and_short_ones_stay():
    assert model_keys(["sim:fair", "sim:biased", "sim:fair"]) == {"sim:fair": "sim:fair", "sim:biased": "sim:biased"}
    keys = model_keys([LONG_SPEC, "sim:fair", LONG_SPEC])
    assert keys == {LONG_SPEC: "M1", "sim:fair": "M2"}
    assert key_legend(keys) == [{"key": "M1", "model": LONG_SPEC}, {"key": "M2", "model": "sim:fair"}]
    assert key_legend(model_keys(["sim:fair"])) == []


def test_decision_line_names_the_rule_the_deciding_number_and_the_outcome():
    fields = {"rule": "both", "p": 0.0001, "p_adjusted": 0.0036, "alpha": 0.05, "significant": True, "relevant": True}
    assert (
        decision_line(Decision(**fields), False, "nTVD > 20")
        == "fails when nTVD > 20 and adjusted p < 0.05: adjusted p = 0.0036 → FAIL"
    )
    significance = Decision(**fields | {"rule": "significance", "relevant": False})
    assert decision_line(significance, False, "nTVD > 20") == "fails when adjusted p < 0.05: adjusted p = 0.0036 → FAIL"
    unadjusted = Decision(rule="both", p=0.5, alpha=0.05)
    assert decision_line(unadjusted, True, "nTVD > 20") == "fails when nTVD > 20 and p < 0.05: p = 0.5 → pass"
    untestable = Decision(rule="both", estimable=False, reason="constant", alpha=0.05)
    assert decision_line(untestable, True, "|difference| > 20 points").endswith(": not estimable → pass")
    assert decision_line(None, True, "x") is None


def test_breakable_escapes_and_allows_breaks_only_after_separators():
    assert str(breakable("a<b>:c-d")) == "a&lt;b&gt;:<wbr>c-<wbr>d"
    assert "<wbr>" not in str(breakable("instruct"))


def test_a_dot_plot_label_column_is_as_wide_as_its_longest_label():
    label = "M1 · speech-implicit"
    figure = dot_interval_plot(
        [{"label": label, "failed": True, "dots": [{"label": "female", "value": 0.0}], "estimate": None}],
        axis_label="accuracy (%)",
        limits=(0.0, 100.0),
        keys=[{"key": "M1", "model": LONG_SPEC}],
    )
    assert figure["left"] >= text_width(label + figure["failed_suffix"]) + 4
    assert figure["keys"] == [{"key": "M1", "model": LONG_SPEC}]


def test_the_distribution_chart_has_a_value_axis_from_0_to_100_percent():
    chart = bar_chart(
        AttributeDistribution(
            attribute="a", groups=["f", "m"], values=["a long value"], probabilities={"f": [0.2], "m": [0.8]}
        )
    )
    assert [tick["label"] for tick in chart["ticks"]] == ["0%", "25%", "50%", "75%", "100%"]
    assert chart["ticks"][0]["x"] == chart["label_width"] and chart["axis_y"] < chart["height"]
    assert chart["label_width"] >= text_width("a long value")
