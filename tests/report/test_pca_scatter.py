"""The PCA scatter of semantic embeddings by group (the semantic-aware paper's Fig. 1) as inline SVG."""

import math
import re
import xml.etree.ElementTree as ET

import pytest

from harness.display.plots import PALETTE, pca_scatter, pca_scatter_figure

SVG = "{http://www.w3.org/2000/svg}"
HOSTILE = "<script>alert(1)</script><img src=x onerror=\"alert(2)\"> & 'q'"


def parse(svg):
    return ET.fromstring(svg)


def groups(root):
    """Per group's ``<g>``: its title (the legend text) -> (fill, number of circles)."""
    return {g.find(f"{SVG}title").text: (g.get("fill"), len(g.findall(f"{SVG}circle"))) for g in root.iter(f"{SVG}g")}


def texts(root):
    return [t.text for t in root.iter(f"{SVG}text")]


def cloud(n, shift=0.0):
    return [(math.cos(i) + shift, math.sin(2 * i) - shift) for i in range(n)]


def test_one_circle_per_point_per_group_coloured_in_sorted_label_order_with_counts_in_the_legend():
    svg = pca_scatter({"simple": cloud(30), "hard": cloud(12, shift=2.0)}, title="Embed-AGG: simple vs hard")
    root = parse(svg)
    assert root.get("role") == "img" and "Embed-AGG: simple vs hard" in root.get("aria-label")
    assert root.find(f"{SVG}title").text == root.get("aria-label")
    assert groups(root) == {"hard (n=12)": (PALETTE[0], 12), "simple (n=30)": (PALETTE[1], 30)}
    assert "hard (n=12)" in texts(root) and "simple (n=30)" in texts(root)
    assert all(c.get("r") == "2.5" for g in root.iter(f"{SVG}g") for c in g.iter(f"{SVG}circle"))
    assert all(g.get("fill-opacity") == "0.45" for g in root.iter(f"{SVG}g"))


def test_points_lie_inside_the_plot_and_keep_their_order_along_both_axes():
    figure = pca_scatter_figure({"a": [(-3.0, 10.0), (0.0, 0.0), (5.0, -10.0)]}, title="t")
    (low, middle, high) = figure["groups"][0]["points"]
    assert figure["left"] <= low[0] < middle[0] < high[0] <= figure["right"]
    assert figure["top"] <= low[1] < middle[1] < high[1] <= figure["bottom"]  # larger PC2 is higher up
    assert [t["label"] for t in figure["x_ticks"]] and [t["label"] for t in figure["y_ticks"]]


def test_coordinates_are_written_at_one_decimal():
    svg = pca_scatter({"a": [(math.pi * i, math.e * i) for i in range(20)]}, title="t")
    numbers = re.findall(r'\b(?:cx|cy|x|y|x1|x2|y1|y2)="(-?[0-9.]+)"', svg)
    assert numbers and all(len(n.partition(".")[2]) <= 1 for n in numbers)


def test_a_group_over_the_cap_is_drawn_as_an_evenly_spaced_subsample_and_says_so():
    points = [(float(i), float(i % 7)) for i in range(5000)]
    svg = pca_scatter({"big": points, "small": cloud(10)}, title="t", max_points_per_group=2000)
    root = parse(svg)
    assert groups(root)["big (n=5000, 2000 drawn)"][1] == 2000
    assert groups(root)["small (n=10)"][1] == 10
    assert "big (n=5000, 2000 drawn)" in texts(root)
    drawn = pca_scatter_figure({"big": points}, title="t", max_points_per_group=2000)["groups"][0]["points"]
    steps = {round(b[0] - a[0], 1) for a, b in zip(drawn, drawn[1:])}
    assert len(steps) <= 3 and max(steps) - min(steps) <= 0.2  # i * 5000 // 2000: steps of 2 or 3 points


def test_a_group_exactly_at_the_cap_is_drawn_whole():
    svg = pca_scatter({"a": cloud(50)}, title="t", max_points_per_group=50)
    assert groups(parse(svg)) == {"a (n=50)": (PALETTE[0], 50)} and "drawn" not in svg


def test_a_cap_below_one_is_refused():
    with pytest.raises(ValueError, match="max_points_per_group"):
        pca_scatter({"a": cloud(3)}, title="t", max_points_per_group=0)


def test_explained_variance_is_named_on_the_axes():
    root = parse(pca_scatter({"a": cloud(5)}, title="t", explained=[0.4123, 0.187]))
    assert "PC1 (41.2% of variance)" in texts(root) and "PC2 (18.7% of variance)" in texts(root)
    plain = parse(pca_scatter({"a": cloud(5)}, title="t"))
    assert "PC1" in texts(plain) and "PC2" in texts(plain) and "variance" not in ET.tostring(plain, encoding="unicode")


@pytest.mark.parametrize("explained", [[float("nan"), 1.5], [None, "x"], [], [0.3]])
def test_unusable_explained_variance_leaves_the_plain_axis_label(explained):
    labels = texts(parse(pca_scatter({"a": cloud(5)}, title="t", explained=explained, x_label="C1", y_label="C2")))
    assert "C2" in labels and ("C1" in labels or "C1 (30.0% of variance)" in labels)


def test_custom_axis_labels():
    root = parse(pca_scatter({"a": cloud(5)}, title="t", x_label="first", y_label="second", explained=(0.5, 0.25)))
    assert "first (50.0% of variance)" in texts(root) and "second (25.0% of variance)" in texts(root)


def test_hostile_labels_and_title_are_escaped():
    svg = pca_scatter({HOSTILE: cloud(3), "ok": cloud(2)}, title=HOSTILE, x_label=HOSTILE, y_label="a\x00b\x1fc")
    assert "<script>" not in svg and "<img" not in svg and "\x00" not in svg
    root = parse(svg)
    assert groups(root)[f"{HOSTILE} (n=3)"][1] == 3
    assert HOSTILE in texts(root) and f"{HOSTILE} (n=3)" in texts(root) and "abc" in texts(root)
    assert HOSTILE in root.get("aria-label")
    assert not list(root.iter(f"{SVG}script")) and not list(root.iter(f"{SVG}img"))


def test_non_finite_and_malformed_points_are_dropped_and_counted_in_the_caption():
    points = {
        "a": [(0.0, 0.0), (float("nan"), 1.0), (1.0, float("inf")), (2.0, 2.0)],
        "b": [(1.0, -float("inf")), None, ("x", 1.0), (1.0, 2.0, 3.0), (1.0, 1.0)],
    }
    root = parse(pca_scatter(points, title="Embed-EOWL"))
    assert groups(root) == {"a (n=2)": (PALETTE[0], 2), "b (n=1)": (PALETTE[1], 1)}
    note = "6 points with non-finite coordinates dropped (a: 2, b: 4)"
    assert note in texts(root) and note in root.get("aria-label") and note in root.find(f"{SVG}title").text
    assert "dropped" not in pca_scatter({"a": cloud(3)}, title="t")


def test_a_single_dropped_point_is_singular():
    assert "1 point with non-finite coordinates dropped (a: 1)" in pca_scatter(
        {"a": [(0.0, 0.0), (math.nan, 0.0)]}, title="t"
    )


@pytest.mark.parametrize(
    "points",
    [
        {},
        {"a": []},
        {"a": [], "b": None},
        {"a": [(math.nan, math.nan), (math.inf, -math.inf)]},
    ],
)
def test_nothing_to_draw_is_an_empty_plot_saying_so(points):
    root = parse(pca_scatter(points, title="empty"))
    assert not list(root.iter(f"{SVG}g")) and "no points to draw" in texts(root) and "empty" in texts(root)
    assert all(f"{label} (n=0)" in texts(root) for label in points)


def test_an_empty_group_is_listed_with_n_0_beside_a_drawn_one():
    root = parse(pca_scatter({"a": cloud(4), "b": []}, title="t"))
    assert groups(root) == {"a (n=4)": (PALETTE[0], 4)} and "b (n=0)" in texts(root)
    assert "no points to draw" not in texts(root)


@pytest.mark.parametrize("points", [{"a": [(1.5, -2.0)]}, {"a": [(3.0, 3.0)] * 5, "b": [(3.0, 3.0)]}, {"a": [(0, 0)]}])
def test_a_single_point_or_identical_points_sit_mid_plot_on_a_finite_axis(points):
    figure = pca_scatter_figure(points, title="t")
    for group in figure["groups"]:
        for x, y in group["points"]:
            assert x == pytest.approx(figure["mid_x"], abs=0.1) and y == pytest.approx(figure["mid_y"], abs=0.1)
    assert figure["x_ticks"] and figure["y_ticks"]
    root = parse(pca_scatter(points, title="t"))
    assert sum(n for _, n in groups(root).values()) == sum(len(p) for p in points.values())
    assert "nan" not in ET.tostring(root, encoding="unicode").lower()


def test_identical_large_coordinates_still_spread_an_axis():
    figure = pca_scatter_figure({"a": [(1e17, -1e17)] * 3}, title="t")
    assert figure["x_ticks"] and all(math.isfinite(c) for p in figure["groups"][0]["points"] for c in p)


def test_numpy_arrays_are_accepted():
    numpy = pytest.importorskip("numpy")
    array = numpy.array([[0.0, 1.0], [numpy.nan, 2.0], [3.0, 4.0]])
    root = parse(pca_scatter({"a": array}, title="t", explained=numpy.array([0.5, 0.2])))
    assert groups(root) == {"a (n=2)": (PALETTE[0], 2)} and "PC1 (50.0% of variance)" in texts(root)


def test_the_same_input_gives_the_same_string():
    points = {"b": cloud(3000, shift=1.0), "a": cloud(40), "c": [(math.nan, 0.0)]}
    first = pca_scatter(points, title="t", explained=[0.3, 0.2], max_points_per_group=500)
    reordered = {key: points[key] for key in ("c", "a", "b")}
    assert first == pca_scatter(points, title="t", explained=[0.3, 0.2], max_points_per_group=500)
    assert first == pca_scatter(reordered, title="t", explained=[0.3, 0.2], max_points_per_group=500)


def test_the_figure_is_wide_enough_for_its_legend_and_caption():
    label = "a rather long group label for the legend"
    figure = pca_scatter_figure({label: cloud(3000)}, title="x" * 120, max_points_per_group=10)
    assert figure["legend_x"] + 12 + 6.5 * len(figure["groups"][0]["legend"]) <= figure["width"]
    assert figure["left"] + 6.5 * 120 <= figure["width"]
    many = pca_scatter_figure({f"g{i:02d}": cloud(2) for i in range(40)}, title="t")
    assert many["groups"][-1]["legend_y"] + 4 <= many["height"]


def test_more_groups_than_colours_reuse_the_palette_in_order():
    figure = pca_scatter_figure({f"g{i:02d}": cloud(2) for i in range(12)}, title="t")
    assert [g["colour"] for g in figure["groups"]] == [PALETTE[i % len(PALETTE)] for i in range(12)]


def test_the_output_stays_small():
    svg = pca_scatter({"a": cloud(2000), "b": cloud(2000, shift=1.0)}, title="t")
    assert len(svg) < 45 * 4000 + 5000
