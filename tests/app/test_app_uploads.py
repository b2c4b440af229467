"""Uploads in the app (streamlit.testing AppTest): traces (shipped and uploaded, with classes the scenario
lacks or cannot have) and the About page's recalibration from a CSV of timings."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from tests.app.harness import app, assert_clean, scenario_of, text_of


def test_trace_upload_and_shipped_traces() -> None:
    at = app("workload")
    at.segmented_control(key="fg:source").set_value("upload").run()
    rows = "\n".join(f"{i * 0.2:.1f},{200 + i},{20 + i % 7}" for i in range(300))
    at.file_uploader(key="fg:upload").set_value(
        ("mine.csv", f"arrival_s,input_tokens,output_tokens\n{rows}\n".encode(), "text/csv")
    ).run()
    assert_clean(at)
    trace = scenario_of(at).workload.trace
    assert trace is not None and trace.format == "csv" and trace.path.startswith("upload:")
    # its 60 s of arrivals in a 120 s window: said, the idle half billed (a walkthrough)
    (idle,) = at.get_by_key("fg-idle-tail").warning
    assert "The trace's arrivals end at 60 s of the 120 s window" in text_of(idle.value)
    # its prompt and answer lengths drawn, as generated lengths are (only its arrivals were: a browser review)
    specs = [c.proto.spec for c in at.get("plotly_chart")]
    assert any("Prompt tokens: mean 350 \\u00b7 p50 350 \\u00b7 p99 496 tokens" in sp for sp in specs), [
        sp[:200] for sp in specs
    ]
    assert any(
        "Output tokens: mean 23 \\u00b7 p50 23 \\u00b7 p99 26 tokens" in sp and "share of requests" in sp
        for sp in specs
    )
    # a broken file is refused with the reason, and the scenario keeps its trace
    bad = app("workload")
    bad.segmented_control(key="fg:source").set_value("upload").run()
    bad.file_uploader(key="fg:upload").set_value(
        ("bad.csv", b"arrival_s,input_tokens,output_tokens\nsoon,1,1\n", "text/csv")
    ).run()
    assert not bad.exception
    assert any("arrival_s" in text_of(e.value) for e in bad.error), [e.value for e in bad.error]
    assert scenario_of(bad).workload.trace is None
    assert any(text_of(e.value).endswith(". The scenario keeps its generated requests.") for e in bad.error)
    # the replay's boxes are those its format reads: a plain CSV has no block size and no gap cut
    boxes = {n.label for n in at.number_input}
    assert {"Time scale", "Max requests", "Start (s)"} <= boxes
    assert not {"Block (tokens)", "Max gap (s)"} & boxes
    # back to generated requests
    at.segmented_control(key="fg:source").set_value("generated").run()
    assert scenario_of(at).workload.trace is None


# --- classes from a trace -------------------------------------------------------------------------


def _upload(at: AppTest, name: str, body: str) -> None:
    at.segmented_control(key="fg:source").set_value("upload").run()
    at.file_uploader(key="fg:upload").set_value((name, body.encode(), "text/csv")).run()


def test_a_trace_with_unknown_classes_offers_to_create_them() -> None:
    at = app("workload")
    labels = ["", "gold", "silver", "gold"]
    rows = "\n".join(f"{i * 0.2:.1f},{200 + i},{20 + i % 7},{labels[i % 4]}" for i in range(300))
    _upload(at, "tiers.csv", f"arrival_s,input_tokens,output_tokens,class\n{rows}\n")
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert scenario_of(at).workload.trace is None  # nothing applied yet
    assert any("gold, silver" in text_of(i.value) for i in at.info), [i.value for i in at.info]
    button = at.button(key="fg:upload-create-classes")
    assert text_of(button.label) == "Create classes gold, silver and use the trace"
    button.click().run()
    assert_clean(at)
    sc = scenario_of(at)
    assert [c.name for c in sc.workload.classes] == ["chat", "gold", "silver"]
    assert all(c.slo == sc.workload.classes[0].slo for c in sc.workload.classes)  # editable on the SLO page
    assert sc.workload.trace is not None and sc.workload.trace.path.startswith("upload:")
    assert any("created classes gold, silver" in text_of(s.value) for s in at.success)
    at.switch_page("app_pages/slo.py").run()
    assert_clean(at)


def test_creating_classes_checks_the_work_as_the_upload_does(monkeypatch: pytest.MonkeyPatch) -> None:
    """The upload's "Create classes and use the trace" applied a file whose replay is over the work bound, which the
    upload itself refuses at once; the run was then refused (a read-through). Now it says so and
    changes nothing."""
    from engine.core import bounds

    at = app("workload")
    rows = "\n".join(f"{i * 0.2:.1f},{200 + i},{20 + i % 7},gold" for i in range(300))
    _upload(at, "tiers.csv", f"arrival_s,input_tokens,output_tokens,class\n{rows}\n")
    monkeypatch.setattr(bounds, "MAX_EVENTS", 100)
    at.button(key="fg:upload-create-classes").click().run()
    assert not at.exception
    sc = scenario_of(at)
    assert [c.name for c in sc.workload.classes] == ["chat"] and sc.workload.trace is None
    said = [text_of(w.value) for w in at.warning]
    assert any("tiers.csv: work bound: about" in w and "simulated events" in w for w in said), said


def test_a_trace_label_that_cannot_be_a_class_names_its_rows() -> None:
    at = app("workload")
    _upload(at, "odd.csv", "arrival_s,input_tokens,output_tokens,class\n0.1,100,10,\n0.2,100,10,[x](y)\n")
    assert not at.exception
    errors = [text_of(e.value) for e in at.error]
    assert len(errors) == 1 and "cannot be a class name" in errors[0] and "line 3" in errors[0], errors
    assert not [b for b in at.button if b.key == "fg:upload-create-classes"]
    assert scenario_of(at).workload.trace is None


# --- recalibration on the About page ----------------------------------------------------------


def test_about_page_shows_the_held_out_error_behind_each_rule() -> None:
    from engine.calibration import trust

    at = app("about")
    assert_clean(at)
    table = next(df.value for df in at.dataframe if "rule" in df.value.columns)
    expected = trust.error_table()
    assert len(table) == len(expected) and len(table) >= 4
    fitted = table[table["rule"].str.startswith("fitted")].iloc[0]
    assert (
        fitted["tpot"] == expected["fitted"]["tpot"]
        and fitted["throughput"] == expected["fitted"]["throughput"]
    )
    assert any("Held out, the error is mostly larger" in m.value for m in at.markdown)


def test_a_fit_no_profile_meets_is_said_before_the_chip_is_used() -> None:
    """A prefill of 0.0001 ms gave the profile's limits, 'Worst |error| 22938454.5%', and 'Use this chip'
    with no word (a review): said, on the page and by `calibrate`, and a fit to sane timings says nothing."""
    import re

    from engine.catalog.entries import load_catalog
    from engine.explain import report

    good = report.example_measurements_csv(load_catalog())
    bad = re.sub(r"(l40s-prefill-1,(?:[^,]*,){10})33\.77,", r"\g<1>0.0001,", good, count=1)
    assert bad != good
    at = app("about")
    at.file_uploader(key="fg:calib-upload").set_value(("bad.csv", bad.encode(), "text/csv")).run()
    said = [text_of(w.value) for w in at.warning]
    assert any("no profile meets them" in w for w in said), said
    assert "," in next(
        m.value for m in at.metric if m.label == "Worst |error|"
    )  # 22,938,454.5%, as the table
    fine = app("about")
    fine.file_uploader(key="fg:calib-upload").set_value(("ok.csv", good.encode(), "text/csv")).run()
    assert not [w for w in fine.warning if "no profile meets them" in text_of(w.value)]


def test_about_page_recalibrates_from_an_upload() -> None:
    from engine.catalog.entries import load_catalog
    from engine.explain import report

    at = app("about")
    assert_clean(at)
    assert "Recalibrate from your own measurements" in [s.value for s in at.subheader]
    assert "Example CSV" in [b.label for b in at.download_button]
    csv_bytes = report.example_measurements_csv(load_catalog()).encode()
    at.file_uploader(key="fg:calib-upload").set_value(("bench.csv", csv_bytes, "text/csv")).run()
    assert_clean(at)
    assert not at.error, [e.value for e in at.error]
    metrics = {m.label: m.value for m in at.metric}
    assert 0.4 < float(metrics["η_F (compute)"]) < 0.7 and 0.6 < float(metrics["η_B (bandwidth)"]) < 0.9
    assert "Catalog entry l40s-mine.toml" in [b.label for b in at.download_button]
    cols = [set(df.value.columns) for df in at.dataframe]
    fit = next(
        df.value
        for df, c in zip(at.dataframe, cols, strict=True)
        if {"predicted", "error"} <= c and "setup" not in c
    )
    assert len(fit) == 9 and fit["id"].str.startswith("l40s-").all()
    assert (fit["error"].abs() < 0.06).all()
    # the fit is the user's own, under the stack they say the timings came from
    assert at.selectbox(key="fg:calib-stack").value == scenario_of(at).deployment.stack
    at.selectbox(key="fg:calib-stack").set_value("sglang").run()
    mark = next(text_of(c.value) for c in at.caption if "your own" in text_of(c.value))
    assert "under SGLang" in mark and "TPOT" in mark, mark
    # the band in the sign Strategy and `calibrate` print it in: where measured figures land around the
    # model's (it read the ratios' sides, TPOT -2.7% to +3.8% beside Strategy's −4% to +3%: a review)
    from engine.explain.confidence import signed_text

    band = report.recalibrate(report.parse_measurements(csv_bytes, "b.csv", load_catalog()), load_catalog(),
                              "l40s", "sglang", "b.csv").profile.band  # fmt: skip
    lo, hi = band["tpot"]
    assert f"TPOT {signed_text(1 / hi - 1, 1 / lo - 1)}" in mark, mark
    assert any(
        "the profile they came from is η_F 0.55" in text_of(c.value) for c in at.caption
    )  # the example's
    # another profile name makes another chip; "use" puts it into the scenario's custom hardware
    at.text_input(key="fg:calib-profile").set_value("vllm").run()
    assert "Catalog entry l40s-vllm.toml" in [b.label for b in at.download_button]
    next(b for b in at.button if b.label == "Add this chip to the scenario's hardware").click().run()
    assert_clean(at)
    custom = scenario_of(at).custom_hardware
    assert [h.id for h in custom] == ["l40s-vllm"] and custom[0].default_profile == "vllm"
    assert custom[0].profiles["vllm"].stack == "sglang" and custom[0].profiles["vllm"].band
    assert any("l40s-vllm" in text_of(s.value) for s in at.success)
    # the file is kept for the session: after a look at Results the fit is still there (it was gone: a review)
    at.switch_page("app_pages/results.py").run()
    at.switch_page("app_pages/about.py").run()
    assert_clean(at)
    assert any(
        "bench.csv" in text_of(c.value) and "earlier in this session" in text_of(c.value) for c in at.caption
    )
    assert "η_F (compute)" in [m.label for m in at.metric]
    at.switch_page("app_pages/strategy.py").run()
    assert_clean(at)
    chips = at.selectbox(key="fg:deployment.pools[0].hardware").options  # "id · name"
    assert any(c.split(" ")[0] == "l40s-vllm" for c in chips), chips


@pytest.mark.parametrize(
    ("content", "words"),
    [
        (b"model,hardware,tp,kind,value,prompt_tokens\nllama-3.1-8b,l40s,1,prefill,30,256\nllama-3.1-8b,l40s,two,prefill,3,3\n",
         "line 3: tp: 'two' is not a whole number"),
        (b"model,hardware,tp,kind,value\nllama-3.1-8b,l40s,1,prefil,3\n", "line 2: kind"),
        (b"\xff\xfe\x00garbage", "not UTF-8"),
    ],
)  # fmt: skip
def test_about_page_names_the_line_of_a_bad_upload(content: bytes, words: str) -> None:
    at = app("about")
    at.file_uploader(key="fg:calib-upload").set_value(("bad.csv", content, "text/csv")).run()
    assert_clean(at)
    errors = [text_of(e.value) for e in at.error]
    assert len(errors) == 1 and "bad.csv" in errors[0] and words in errors[0], errors
    assert not any(m.label == "η_F (compute)" for m in at.metric)


def test_a_preset_switch_forgets_the_upload_and_the_same_file_applies_again() -> None:
    """After an upload, a preset switch left 'Upload a trace' and the file on the Workload page and its
    message on every page, and the same file uploaded again was ignored as one already applied (a
    browser review)."""
    rows = "\n".join(f"{i * 0.2:.1f},{200 + i},{20 + i % 7}" for i in range(300))
    body = f"arrival_s,input_tokens,output_tokens\n{rows}\n".encode()
    at = app("workload")
    _upload(at, "good.csv", body.decode())
    assert scenario_of(at).workload.trace is not None
    assert any("good.csv" in text_of(m.value) for m in (*at.info, *at.success, *at.toast))
    at.selectbox(key="fg:preset").set_value("chat-colocated").run()
    assert_clean(at)
    assert scenario_of(at).workload.trace is None
    assert at.segmented_control(key="fg:source").value == "generated"
    assert not any("good.csv" in text_of(m.value) for m in (*at.info, *at.success, *at.warning))
    at.segmented_control(key="fg:source").set_value("upload").run()
    at.file_uploader(key="fg:upload:1").set_value(("good.csv", body, "text/csv")).run()
    assert_clean(at)
    trace = scenario_of(at).workload.trace
    assert trace is not None and trace.path.startswith("upload:")
    assert any("Replaying the uploaded trace good.csv (csv)" in text_of(c.value) for c in at.caption)


def test_a_file_can_be_uploaded_over_a_shipped_trace() -> None:
    """On a preset that replays a shipped trace, 'Upload a trace' sprang back to 'Shipped trace' and
    no uploader appeared (a browser review): the choice holds, the shipped trace replayed until a
    file is applied."""
    from tests.app.harness import short

    at = app("workload", short("mooncake-replay"), preset="mooncake-replay")
    at.segmented_control(key="fg:source").set_value("upload").run()
    assert_clean(at)
    assert at.segmented_control(key="fg:source").value == "upload"
    assert [u.label for u in at.get("file_uploader")].count("Trace file") == 1
    assert any("Replaying the shipped trace" in text_of(c.value) for c in at.caption)


def test_an_upload_says_the_rows_its_window_leaves_out() -> None:
    """A file stamped in milliseconds, read as seconds: 3,000 rows, 3 in a 120 s window. The upload said
    '3 requests in the window' and then that the trace's arrivals end at 0 s (a review); it says where
    the rest went and what would bring them in, and the idle-tail warning is gone (the file does not end,
    the window cuts it)."""
    at = app("workload")
    rows = "\n".join(f"{i * 200},{200 + i % 50},{20 + i % 7}" for i in range(3000))
    _upload(at, "ms.csv", f"arrival_s,input_tokens,output_tokens\n{rows}\n")
    assert_clean(at)
    said = " ".join(text_of(m.value) for m in (*at.success, *at.toast, *at.caption))
    assert "1 request in the window of the file's 3,000: 2,999 at or past its end at 120 s" in said
    assert "(the file runs to 599,800 s)" in said
    assert "set the trace's time scale to 1,000" in said
    assert not [w for w in at.warning if "arrivals end at" in text_of(w.value)]


def test_a_second_upload_replaces_the_firsts_message() -> None:
    """After one.csv then two.csv, one.csv's message stayed at the top of every page though two.csv was the
    trace replayed (a review)."""
    rows = "\n".join(f"{i * 0.2:.1f},{200 + i},{20 + i % 7}" for i in range(300))
    body = f"arrival_s,input_tokens,output_tokens\n{rows}\n"
    at = app("workload")
    _upload(at, "one.csv", body)
    assert any("one.csv" in text_of(m.value) for m in (*at.success, *at.toast, *at.info))
    at.file_uploader(key="fg:upload").set_value(
        ("two.csv", (body + "61,300,30\n").encode(), "text/csv")
    ).run()
    said = [text_of(m.value) for m in (*at.success, *at.toast, *at.info, *at.warning)]
    assert any("two.csv" in t for t in said) and not any("one.csv" in t for t in said), said


def test_a_trace_over_the_work_bound_offers_its_earliest_requests(monkeypatch: pytest.MonkeyPatch) -> None:
    """A 1.5M-row trace was refused with 'the trace's max requests keeps the earliest', a field shown only
    once a file is applied (a browser review): the refusal offers the earliest requests that fit, and a cap
    set over the trace before holds for the next file."""
    from engine.core import bounds

    at = app("workload")
    monkeypatch.setattr(bounds, "MAX_EVENTS", 5_000)
    rows = "\n".join(f"{i * 0.05:.2f},{200 + i % 50},{20 + i % 7}" for i in range(3000))
    _upload(at, "big.csv", f"arrival_s,input_tokens,output_tokens\n{rows}\n")
    assert not at.exception and scenario_of(at).workload.trace is None
    assert any("big.csv: work bound: about" in text_of(e.value) for e in at.error), [
        e.value for e in at.error
    ]
    button = at.button(key="fg:upload-earliest")
    count = int(text_of(button.label).split("earliest ")[1].split(" ")[0].replace(",", ""))
    assert 0 < count < 3000
    button.click().run()
    assert_clean(at)
    tr = scenario_of(at).workload.trace
    assert tr is not None and tr.max_requests == count and tr.path.startswith("upload:")
    assert any(f"big.csv: its earliest {count:,} requests" in text_of(s.value) for s in at.success)
    # another file over the bound replays under the cap now set, as the CLI does with it
    more = "\n".join(f"{i * 0.05:.2f},{300 + i % 50},{25 + i % 7}" for i in range(3000))
    _upload(at, "more.csv", f"arrival_s,input_tokens,output_tokens\n{more}\n")
    assert_clean(at)
    tr = scenario_of(at).workload.trace
    assert (
        tr is not None
        and tr.max_requests == count
        and any("more.csv" in text_of(s.value) for s in at.success)
    )


def test_creating_classes_offers_the_earliest_requests_and_keeps_a_cap(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """ "Create classes and use the trace" refused a file over the work bound with no way out, where a plain
    upload offers its earliest requests that fit, and dropped a max-requests cap set over the trace before (a
    read-through): it offers them, and the cap holds."""
    from engine.core import bounds

    at = app("workload")
    monkeypatch.setattr(bounds, "MAX_EVENTS", 5_000)
    rows = "\n".join(f"{i * 0.05:.2f},{200 + i % 50},{20 + i % 7},gold" for i in range(3000))
    _upload(at, "tiers.csv", f"arrival_s,input_tokens,output_tokens,class\n{rows}\n")
    assert not [b for b in at.button if b.key == "fg:upload-create-earliest"]  # offered once it is refused
    at.button(key="fg:upload-create-classes").click().run()
    assert not at.exception and scenario_of(at).workload.trace is None
    button = at.button(key="fg:upload-create-earliest")
    label = text_of(button.label)
    assert label.startswith("Create class gold and replay its earliest "), label
    count = int(label.split("earliest ")[1].split(" ")[0].replace(",", ""))
    assert 0 < count < 3000
    button.click().run()
    assert_clean(at)
    sc = scenario_of(at)
    assert [c.name for c in sc.workload.classes] == ["chat", "gold"]
    assert sc.workload.trace is not None and sc.workload.trace.max_requests == count
    assert any(
        f"{count:,} requests in the window of the file's 3,000" in text_of(s.value) for s in at.success
    )
    # the cap now set holds for the next file that needs a class created, as for a plain upload
    more = "\n".join(f"{i * 0.05:.2f},{300 + i % 50},{25 + i % 7},silver" for i in range(3000))
    _upload(at, "more.csv", f"arrival_s,input_tokens,output_tokens,class\n{more}\n")
    at.button(key="fg:upload-create-classes").click().run()
    assert_clean(at)
    sc = scenario_of(at)
    assert [c.name for c in sc.workload.classes] == ["chat", "gold", "silver"]
    assert sc.workload.trace is not None and sc.workload.trace.max_requests == count


def test_a_trace_over_the_request_cap_offers_its_earliest_requests(monkeypatch: pytest.MonkeyPatch) -> None:
    """A 1.8M-row trace, over the 1,666,666 requests a replay holds, was refused naming
    workload.trace.max_requests, a field not on the page, with no button (a browser review): it is offered
    its earliest requests, the cap's worth where their work fits."""
    from engine.core import bounds

    at = app("workload")
    monkeypatch.setattr(bounds, "MAX_REQUESTS", 2000)  # once the page is up: the presets' runs exceed it
    rows = "\n".join(f"{i * 0.04:.2f},{200 + i % 50},{20 + i % 7}" for i in range(2500))
    _upload(at, "many.csv", f"arrival_s,input_tokens,output_tokens\n{rows}\n")
    assert not at.exception and scenario_of(at).workload.trace is None
    said = [text_of(e.value).replace("\\", "") for e in at.error]
    assert any(
        "many.csv: 2,500 requests in the window, more than the 2,000 a replay holds" in t for t in said
    ), said
    assert not any("workload.trace.max_requests" in t for t in said), said
    button = at.button(key="fg:upload-earliest")
    assert text_of(button.label) == "Replay its earliest 2,000 requests"
    monkeypatch.undo()  # (the sidebar reads the presets whole, each over a cap this small)
    button.click().run()
    assert_clean(at)
    tr = scenario_of(at).workload.trace
    assert tr is not None and tr.max_requests == 2000


def test_a_gzipped_agentic_session_file_uploads() -> None:
    """The page took .csv and .jsonl alone and read JSON as Mooncake's: agentic sessions (the shipped sample
    is a .jsonl.gz) could not be uploaded at all. Gzipped, pretty-printed, they replay as agentic sessions,
    and the window says what cuts their pauses."""
    import gzip
    import json

    def session(i: int) -> dict[str, object]:
        turns = [{"t": t, "in": 512 * (k + 1), "out": 40, "hash_ids": list(range(1, 2 * k + 3))} for k, t in (
            (0, 0), (1, 3), (2, 9000)
        )]  # fmt: skip
        return {"id": f"s{i}", "block_size": 256, "requests": turns}

    body = gzip.compress("\n".join(json.dumps(session(i), indent=1) for i in range(3)).encode())
    at = app("workload")
    at.segmented_control(key="fg:source").set_value("upload").run()
    at.file_uploader(key="fg:upload").set_value(("agent.json.gz", body, "application/gzip")).run()
    assert_clean(at)
    trace = scenario_of(at).workload.trace
    assert trace is not None and trace.format == "agentic" and trace.path.endswith(".jsonl")
    said = " ".join(text_of(m.value) for m in (*at.success, *at.toast, *at.caption))
    assert (
        "6 requests in the window of the file's 9" in said
        and "Max gap (workload.trace.max_gap_s) cuts" in said
    )
    assert "Max gap (s)" in {n.label for n in at.number_input}
    # its message counted the window at upload: once the gap cut changes what the window holds, it goes (it
    # stood on every page with its old counts: a browser review); the line under the arrivals says the new
    (gap,) = [n for n in at.number_input if n.label == "Max gap (s)"]
    gap.set_value(60.0).run()
    assert_clean(at)
    assert not [m for m in at.success if "agent.json.gz" in text_of(m.value)]
    # every session's third turn now comes 60 s after its second: the whole file in the window, its tail idle
    assert any("The trace's arrivals end at 63 s of the 120 s window" in text_of(w.value) for w in at.warning)
    at.switch_page(
        "app_pages/results.py"
    ).run()  # the run says it too (the Workload page alone did: a review)
    assert_clean(at)
    assert any("The trace's arrivals end at 63 s" in text_of(i.value) for i in at.info), [
        text_of(i.value) for i in at.info
    ]
