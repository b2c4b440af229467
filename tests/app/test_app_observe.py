"""App test of the Hardware page's "Calibrate from your benchmark" (issue 33): a `vllm bench serve
--save-result --save-detailed` JSON from an H100 gives, in three steps (upload, fit, use), the replay
chart, a fitted profile with its held-out error, and a scenario that runs the chip with it."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.app.harness import app, assert_clean, scenario_of, text_of

FIX = Path(__file__).resolve().parents[1] / "observe" / "fixtures"
TP = "fg:observe-tp:llama-3.1-8b:h100-sxm"
"""The Tensor parallel box of the fixtures' model on the scenario's chip (a box per model and chip)."""
FILES = ("vllm_bench_detailed.json", "vllm_bench_detailed_rate8.json")


def _upload(at, names):  # type: ignore[no-untyped-def]
    values = [(n, (FIX / n).read_bytes(), "application/json") for n in names]
    return at.file_uploader(key="fg:observe-upload").set_value(values).run()


def _frame(at, column):  # type: ignore[no-untyped-def]
    """The first table of the page with `column` (a styled frame's data)."""
    for df in at.dataframe:
        value = df.value
        data = getattr(value, "data", value)
        if column in data.columns:
            return data
    raise AssertionError(f"no table with {column!r}")


@pytest.mark.slow
def test_upload_replay_fit_and_use_a_benchmark() -> None:
    at = app("hardware")
    assert_clean(at)
    assert "Calibrate from your benchmark" in [s.value for s in at.subheader]
    charts_before = len(at.get("plotly_chart"))
    _upload(at, FILES)  # step 1
    assert_clean(at)
    assert not at.error, [e.value for e in at.error]
    assert any("vllm-bench-json" in c.value and "per-request rows" in c.value for c in at.caption)
    assert at.selectbox(key="fg:observe-model").value == "llama-3.1-8b"  # recognised from the file
    labels = [b.label for b in at.selectbox]
    assert len(labels) == len(set(labels)), labels  # the page's model picker and this one told apart
    assert len(at.get("plotly_chart")) == charts_before + 3  # TTFT, TPOT and E2E: measured vs simulated
    before = _frame(at, "error")
    assert {"ttft", "tpot", "e2e", "output_tok_s"} <= set(before["figure"])
    at.toggle(key="fg:observe-fit").set_value(True).run()  # step 2
    assert_clean(at)
    metrics = {m.label: m.value for m in at.metric}
    assert "%" in metrics["Held-out median |error|"]
    both = _frame(at, "error_after")
    assert {"error_before", "error_after"} <= set(both.columns) and len(both) == len(before)
    configs = "".join(df.proto.columns for df in at.dataframe)
    assert '"error, fitted"' in configs  # headings in words, not the frame's snake_case
    assert '"format": "percent"' in configs.replace('":"', '": "')  # the held-out error as the metric says it
    held = [df for df in at.dataframe if "held-out median" in df.proto.columns]
    assert held and all(df.proto.placeholder == "–" for df in held)  # one file's missing error: not 'None'
    assert "Catalog entry h100-sxm-mine.toml" in [b.label for b in at.download_button]
    # fitted on the 8B model the file served, offered to the scenario's 70B: said before it is moved
    moved = [text_of(c.value) for c in at.caption if text_of(c.value).startswith("Fitted on llama-3.1-8b")]
    assert moved and "the scenario serves llama-3.1-70b" in moved[0], moved
    next(b for b in at.button if b.label == "Run the scenario on this chip").click().run()  # step 3
    assert_clean(at)
    sc = scenario_of(at)
    assert [h.id for h in sc.custom_hardware] == ["h100-sxm-mine"]
    assert sc.custom_hardware[0].profiles["mine"].source.startswith("user's own")
    assert {p.hardware for p in sc.deployment.pools} == {"h100-sxm-mine"}
    assert any("h100-sxm-mine" in text_of(s.value) for s in at.success)
    at.switch_page("app_pages/results.py").run()  # the scenario runs with it
    assert_clean(at)


@pytest.mark.slow
def test_a_file_of_no_known_format_is_refused_in_one_line() -> None:
    at = app("hardware")
    at.file_uploader(key="fg:observe-upload").set_value(
        [("x.json", b'{"hello": 1}', "application/json")]
    ).run()
    assert_clean(at)
    assert len(at.error) == 1 and "none of" in at.error[0].value and "\n" not in at.error[0].value


def test_a_broken_file_beside_a_good_one_leaves_the_good_ones_replay() -> None:
    """A broken file uploaded with a good one hid the good one's replay until it was removed (a browser
    review): the broken one's error is said and the good one is replayed without it."""
    at = app("hardware")
    good = (FIX / FILES[0]).read_bytes()
    at.file_uploader(key="fg:observe-upload").set_value(
        [(FILES[0], good, "application/json"), ("broken.csv", b"a,b\n1,2\n", "text/csv")]
    ).run()
    assert_clean(at)
    assert len(at.error) == 1 and text_of(at.error[0].value).startswith("broken.csv")
    assert any("without the file above" in text_of(c.value) for c in at.caption)
    assert "error" in _frame(at, "error").columns  # the good file's replay table


@pytest.mark.slow
def test_a_file_without_its_load_asks_for_it() -> None:
    at = app("hardware")
    data = (FIX / "aiperf_profile_export_aiperf.csv").read_bytes()
    at.file_uploader(key="fg:observe-upload").set_value([("run.csv", data, "text/csv")]).run()
    assert_clean(at)
    assert any("Give the concurrency" in i.value for i in at.info)
    at.number_input(key="fg:observe-load").set_value(4).run()
    assert_clean(at)
    assert not at.error, [e.value for e in at.error]
    assert {"ttft", "tpot", "e2e"} <= set(_frame(at, "error")["figure"])


@pytest.mark.slow
def test_two_scrapes_ask_for_the_window_then_replay_it() -> None:
    at = app("hardware")
    values = [
        (n, (FIX / n).read_bytes(), "text/plain") for n in ("vllm_metrics_t60.prom", "vllm_metrics_t0.prom")
    ]
    at.file_uploader(key="fg:observe-upload").set_value(values).run()
    assert_clean(at)
    assert any("seconds between the two scrapes" in i.value for i in at.info)
    at.number_input(key="fg:observe-window").set_value(60.0).run()
    assert_clean(at)
    # the readers' notes join the caption as sentences ("... (weights and KV). A server's metrics ...")
    assert any("KV). A server's metrics" in text_of(c.value) for c in at.caption)
    assert not at.error, [e.value for e in at.error]
    table = _frame(at, "error")
    rate = table[table["figure"] == "request_rps"]["measured"]
    assert float(rate.iloc[0]) == pytest.approx(4.0)


@pytest.mark.slow
def test_a_fitted_chip_is_marked_as_your_own_calibration() -> None:
    """Fitted to three files on the Hardware page, the chip runs the scenario marked calibrated, as the
    user's own, with the band of the fit's held-out errors; the advisor asks no calibration of it."""
    at = app("hardware")
    _upload(at, (*FILES, "aiperf_profile_export_aiperf.json"))
    at.toggle(key="fg:observe-fit").set_value(True).run()
    next(b for b in at.button if b.label == "Run the scenario on this chip").click().run()
    assert_clean(at)
    prof = scenario_of(at).custom_hardware[0].profiles["mine"]
    assert prof.stack == scenario_of(at).deployment.stack and prof.band
    assert any(
        "your own calibration under vLLM, with the band of its held-out errors" in text_of(s.value)
        for s in at.success
    )
    at.switch_page("app_pages/results.py").run()
    assert_clean(at)
    captions = [text_of(c.value) for c in at.caption]
    assert any("your own calibration, fitted to your benchmark" in c for c in captions), captions
    assert not any("uncalibrated" in c for c in captions), captions
    texts = [text_of(e.value) for e in (*at.markdown, *at.warning, *at.info, *at.caption)]
    assert not [t for t in texts if "h100-sxm-mine" in t and "uncalibrated" in t]
    at.switch_page("app_pages/strategy.py").run()
    assert_clean(at)
    assert any("your own calibration, fitted to your benchmark under" in text_of(c.value) for c in at.caption)


@pytest.mark.slow
def test_an_upload_is_still_there_after_a_look_at_another_page() -> None:
    """The uploader empties on a page change (Streamlit keeps no file across pages): a benchmark and its
    replay were gone after a look at Results (a review). The files are kept for the session, said under
    the box, until the user forgets them or clears the box."""
    at = _upload(app("hardware"), FILES[:1])
    assert_clean(at)
    charts = len(at.get("plotly_chart"))
    at.number_input(key=TP).set_value(4).run()  # what the user said of the file: kept too
    at.switch_page("app_pages/results.py").run()
    at.switch_page("app_pages/hardware.py").run()
    assert_clean(at)
    assert at.number_input(key=TP).value == 4  # (it went back to the scenario's pool's: a review)
    assert not at.file_uploader(key="fg:observe-upload").value  # the box itself is empty again
    kept = [text_of(c.value) for c in at.caption if "uploaded earlier in this session" in text_of(c.value)]
    assert kept and FILES[0] in kept[0], kept
    assert len(at.get("plotly_chart")) == charts  # the replay drawn again from the kept file
    at.button(key="fg:observe-upload:forget").click().run()
    assert_clean(at)
    assert not [c for c in at.caption if "uploaded earlier in this session" in text_of(c.value)]
    assert len(at.get("plotly_chart")) == charts - 3  # the replay's TTFT, TPOT and E2E charts gone
    _upload(at, FILES[:1])  # cleared by the user: forgotten, not kept
    at.file_uploader(key="fg:observe-upload").set_value([]).run()
    at.switch_page("app_pages/results.py").run()
    at.switch_page("app_pages/hardware.py").run()
    assert not [c for c in at.caption if "uploaded earlier in this session" in text_of(c.value)]


def test_tensor_parallel_starts_at_the_least_that_holds_the_files_model() -> None:
    """The file cannot say its layout: the box took the scenario's tp 2 for an 8B benchmark, whose replay
    then read TTFT -50% and TPOT -42% as if the model were that far off (a browser review). It starts at the
    least TP that holds the model the file names, and a caption says what the file leaves to the reader.
    Another model starts at its own least (70B kept the 8B's TP 1, refused naming the scenario's
    deployment.pools[0].tp: a browser review), and a TP below it is refused on this form's terms."""
    at = app("hardware")
    assert scenario_of(at).deployment.pools[0].tp > 1  # the scenario's own layout is not the benchmark's
    _upload(at, FILES[:1])
    assert_clean(at)
    assert at.number_input(key=TP).value == 1
    said = [text_of(c.value) for c in at.caption if "does not say its chip" in text_of(c.value)]
    assert said and "least tensor parallel" not in said[0], said
    at.number_input(key=TP).set_value(4).run()  # above the least: a choice, not corrected
    said = [text_of(c.value) for c in at.caption if "does not say its chip" in text_of(c.value)]
    assert "least" not in said[0] and not at.error, said
    at.selectbox(key="fg:observe-model").set_value("llama-3.1-70b").run()
    assert_clean(at)
    big = "fg:observe-tp:llama-3.1-70b:h100-sxm"
    assert at.number_input(key=big).value == 2 and not at.error
    at.number_input(key=big).set_value(1).run()
    errors = [text_of(e.value) for e in at.error]
    assert errors == [
        "Tensor parallel: llama-3.1-70b in bf16 needs at least 2 h100-sxm chips an instance (got 1)"
    ]


def test_the_same_file_twice_is_used_once() -> None:
    """The same file uploaded twice counted as two files, and the held-out error halved (3.6% read 1.8%: a
    browser review): a copy is said and used once."""
    at = app("hardware")
    data = (FIX / FILES[0]).read_bytes()
    at.file_uploader(key="fg:observe-upload").set_value(
        [(FILES[0], data, "application/json"), ("copy.json", data, "application/json")]
    ).run()
    assert_clean(at)
    said = [text_of(i.value).replace("\\", "") for i in at.info]
    assert [w for w in said if w.startswith("copy.json is the same file as vllm_bench_detailed.json")], said
    # the same name twice, as Streamlit adds an upload again: said once, not 'x is the same file as x' twice
    at.file_uploader(key="fg:observe-upload").set_value([(FILES[0], data, "application/json")] * 3).run()
    said = [text_of(i.value).replace("\\", "") for i in at.info]
    assert [w for w in said if "used once" in w] == [f"{FILES[0]} is uploaded more than once: used once."], (
        said
    )
    at.toggle(key="fg:observe-fit").set_value(True).run()
    files = _frame(at, "held_out_abs_error")
    assert list(files["file"]) == [FILES[0]], files


def test_each_files_replay_can_be_shown() -> None:
    """With two files only the first's replay was ever shown: the second's errors could not be checked
    against a fit made from it (a browser review). A select picks the file replayed."""
    at = app("hardware")
    _upload(at, FILES)
    assert_clean(at)
    first = _frame(at, "error")
    box = at.selectbox(key="fg:observe-shown")
    assert list(box.options) == list(FILES)  # (the labels, as the page shows them)
    box.set_value(1).run()
    assert_clean(at)
    second = _frame(at, "error")
    rps = {
        n: f[(f["figure"] == "request_rps") & (f["stat"] == "mean")]["measured"].iloc[0]
        for n, f in (("a", first), ("b", second))
    }
    assert rps["b"] > rps["a"]  # the rate-8 file's own requests, not the first file's
    at.toggle(key="fg:observe-fit").set_value(True).run()
    assert_clean(at)
    said = [m.value for m in at.markdown if "replayed with the chip's profile before and after" in m.value]
    assert said and "rate8" in said[0], said


def test_a_fit_moved_to_another_precision_of_the_same_model_says_precision() -> None:
    """'Fitted on llama-3.1-70b in bf16; the scenario serves llama-3.1-70b in fp8 ... carries over as any chip's
    does to a model it was not measured on': the same model (a browser review)."""
    from tests.app.harness import short

    at = app("hardware", short(**{"model.id": "llama-3.1-8b", "model.weights": "fp8"}))
    _upload(at, FILES)
    at.toggle(key="fg:observe-fit").set_value(True).run()
    assert_clean(at)
    said = [
        text_of(c.value) for c in at.caption if text_of(c.value).startswith("Fitted on llama-3.1-8b in bf16")
    ]
    assert (
        said and "to a precision it was not measured on" in said[0] and "model" not in said[0].split(".")[-2]
    )


def test_files_of_two_stacks_are_said_and_a_means_only_replay_says_why_it_draws_one_curve() -> None:
    """A vLLM file beside an SGLang one was replayed and fitted under vLLM unsaid, and the SGLang file, means
    only, drew a lone simulated step with no measured curve and no word why (a browser review)."""
    at = app("hardware")
    _upload(at, (FILES[0], "sglang_bench.jsonl"))
    warned = [text_of(w.value) for w in at.warning if "different serving stacks" in text_of(w.value)]
    assert len(warned) == 1 and "sglang_bench.jsonl SGLang" in warned[0].replace("\\", ""), warned
    at.selectbox(key="fg:observe-shown").set_value(1).run()
    said = [
        text_of(c.value).replace("\\", "")
        for c in at.caption
        if "percentiles not compared" in text_of(c.value)
    ]
    assert said and said[0].startswith("sglang_bench.jsonl: ") and "the simulated curve alone" in said[0], (
        said
    )
