"""App tests of what a browser review of the new pages found (issues 34, 35): the roofline's layouts,
the catalog's memory columns, the tier roofs, the maturity select, the lifetime section, pool labels
and the over-time panel."""

from __future__ import annotations

from tests.app.harness import app, assert_clean, catalog, scenario_of, short, text_of


def test_an_sram_only_chip_is_drawn_at_a_pipelined_layout() -> None:
    """Groq's LPU holds a 70B model only across hundreds of chips in pipeline stages (as
    sram-decode-groq serves it), not at any TP alone: the roofline draws it there, not 'Not drawn'."""
    at = app("hardware")
    at.multiselect(key="fg:roofline-chips").set_value(["h100-sxm", "groq-lpu"]).run()
    assert_clean(at)
    assert not [c.value for c in at.caption if "Not drawn" in c.value]
    points = next(df.value for df in at.dataframe if "intensity_flops_per_byte" in df.value.columns)
    assert set(points["chip"]) == {"h100-sxm ×2", "groq-lpu ×576 (tp64 pp9)"}


def test_each_memory_tier_has_its_own_dash_and_the_main_roof_is_named() -> None:
    """SN40L's SRAM and DDR roofs were both dotted in the chip's colour, its main roof unnamed as HBM."""
    from engine.catalog.entries import load_catalog
    from engine.explain.roofline_chips import roofline
    from ui import hardware_charts as charts

    cat = load_catalog()
    model, sn40l, h100 = cat.model("llama-3.1-70b"), cat.chip("sn40l"), cat.chip("h100-sxm")
    curves, points = roofline(model, [(sn40l, 8), (h100, 2)], "bf16", "bf16")
    lines = {t.name: t.line.dash for t in charts.roofline(curves, points).data if t.mode == "lines"}
    assert lines == {
        "sn40l ×8 HBM roof": "solid",
        "sn40l ×8 SRAM roof": "dot",
        "sn40l ×8 DDR roof": "dashdot",
        "h100-sxm ×2": "solid",  # a chip of one memory keeps its plain name
    }
    # partly calibrated (a MoE model's experts at a shared factor) and uncalibrated named so (a review)
    marked = charts.roofline(curves, points, uncalibrated={"sn40l ×8"}, partly={"h100-sxm ×2"}).data
    named = {t.name: t.line.dash for t in marked if t.mode == "lines"}
    assert (
        named["h100-sxm ×2 (partly calibrated)"] == "solid"
        and named["sn40l ×8 HBM roof (uncalibrated)"] == "dash"
    )


def test_the_catalog_names_main_memory_by_what_it_is() -> None:
    """Groq's LPU read 'HBM (GB) 0.23, HBM (TB/s) 80' with an empty SRAM tier: its only memory is SRAM.
    The main-memory columns are 'Memory', with a type column; DDR has its bandwidth; empty cells are '—'."""
    from ui import tables
    from ui.hardware import HARDWARE_VIEWS

    at = app("hardware")
    assert_clean(at)
    hw = catalog(at)
    assert hw.loc["groq-lpu", "memory_type"] == "SRAM" and hw.loc["h100-sxm", "memory_type"] == "HBM"
    assert hw.loc["l40s", "memory_type"] == "GDDR"
    assert hw.loc["sn40l", "tiers"] == "SRAM → HBM → DDR" and hw.loc["sn40l", "ddr_tb_s"] > 0
    # how sure, then what kind of chip, then its name (the calibration sat past the names at 1,100 px)
    assert list(hw.columns[:4]) == ["calibration", "class", "memory_type", "name"]
    labels = {k: getattr(v, "get", lambda _k: None)("label") for k, v in tables.HARDWARE.items()}
    # GiB, as the pools' lines read it ("of 80 GiB"): "Memory (GB)" beside them read as two units
    assert labels["memory_gb"] == "Memory (GiB)" and labels["memory_tb_s"] == "Memory (TB/s)"
    assert not [v for v in labels.values() if v and "HBM" in v]
    assert all(t.dataframe[0].proto.placeholder == "—" for t in at.tabs if t.label in HARDWARE_VIEWS)


def test_the_maturity_options_are_short_and_say_their_effect_on_the_pool() -> None:
    """The options ran past the card's width, and 'as calibrated' and 'measured' read alike: each now
    says its effect in a few words, and a caption under the select says what it does to this pool."""
    at = app("strategy")
    key = "fg:deployment.pools[1].maturity"
    box = at.selectbox(key=key)
    assert box.options == [
        "as calibrated (no change)",
        "measured (×1, no porting)",
        "vendor (compute ×0.8, bw ×0.85)",
        "port (compute ×0.5, bw ×0.6)",
    ]
    assert all(len(o) <= 36 for o in box.options)  # a 300 px card holds about that many

    def said() -> str:
        return " ".join(text_of(c.value) for c in at.caption)

    assert "No change: the chip's own rule, measured (fitted under this stack): compute 0." in said()
    # which peak each fraction is of (0.55 of peak beside an FP8 model read as its FP8 peak: a review)
    assert " of its BF16 peak and bandwidth 0." in said() and " of its peak, no porting cost." in said()
    box.set_value("measured").run()
    assert "Asserts vLLM is mature on this chip (as its fit says)" in said()
    at.selectbox(key=key).set_value("vendor").run()
    assert_clean(at)
    assert scenario_of(at).deployment.pools[1].maturity == "vendor"
    text = said()
    assert (
        "A vendor stack with partial kernel coverage: compute 0." in text
        and "6 engineer-months ($150,000" in text
    )


def test_an_autoscaled_pool_says_its_count_is_a_ceiling_and_the_power_cap_its_unit() -> None:
    """'8 × 2 × h100-sxm = 16 chips' and 'Instances' read as a fixed pool while autoscaling; 'Power cap kw'."""
    at = app("strategy", short("day-autoscaled"), preset="day-autoscaled")
    assert_clean(at)
    count = at.slider(key="fg:deployment.pools[0].count")
    assert count.label == "Max instances" and "autoscaler" in (count.help or "")
    ceilings = [c for c in at.caption if text_of(c.value).startswith("at most 8 × 2 × h100-sxm = 16 chips")]
    assert len(ceilings) == 2  # both pools autoscale
    cap = at.number_input(key="fg:deployment.pools[0].power_cap_kw")
    assert cap.label == "Power cap (kW)" and "no cap" in (cap.help or "")
    at.toggle(key="fg:deployment.pools[0].autoscale:on").set_value(False).run()  # a fixed pool again
    assert_clean(at)
    assert at.slider(key="fg:deployment.pools[0].count").label == "Instances"
    assert [text_of(c.value).startswith("at most") for c in at.caption if "16 chips" in text_of(c.value)] == [
        False,  # the prefill pool, fixed
        True,  # the decode pool, still autoscaled
    ]


def test_the_over_time_charts_share_a_clock_and_mark_the_fault() -> None:
    """The SLO chart's axis ended with the window while the others ran on through the drain, and a lost
    pool was nowhere marked: all four now share one x-range and a numbered line at the fault, with its key."""
    import json

    at = app("results", short("portfolio-decode-loss", duration_s=600.0), preset="portfolio-decode-loss")
    assert_clean(at)
    specs = {
        c.key.removeprefix("fg:chart:"): json.loads(c.proto.spec)
        for c in at.get("plotly_chart")
        if c.key and c.key.endswith("_per_minute")
    }
    assert set(specs) == {"slo_per_minute", "instances_per_minute", "power_per_minute", "busy_per_minute"}
    ranges = {what: tuple(s["layout"]["xaxis"]["range"]) for what, s in specs.items()}
    assert len(set(ranges.values())) == 1, ranges
    for what, spec in specs.items():
        lines = [
            s for s in spec["layout"]["shapes"] if s.get("x0") == s.get("x1") == 5.0
        ]  # the fault at 300 s
        notes = {a.get("hovertext"): a["text"] for a in spec["layout"]["annotations"]}
        assert lines and notes.get("decode-chat: 3 instances lost for good") == "1", (what, notes)
    # the number's key under the charts, in words
    assert any("**1** at minute 5.0: decode-chat: 3 instances lost for good" in c.value for c in at.caption)
    assert (
        specs["instances_per_minute"]["layout"]["yaxis"]["title"]["text"]
        == "instances billed<br>(minute mean)"
    )


def test_fault_marks_name_losses_recoveries_and_links() -> None:
    from engine.explain import fault_marks
    from engine.scenario.model import Fault

    marks = fault_marks(
        [
            Fault(at_s=600.0, pool="p", kind="link", link_factor=0.0, duration_s=120.0),
            Fault(at_s=120.0, pool="d", instances=2),
        ]
    )
    assert [tuple(m) for m in marks] == [
        (2.0, "d: 2 instances lost for good"),
        (10.0, "p's KV link down"),
        (12.0, "p: KV link restored"),
    ]


def test_an_unset_gateway_is_off_not_its_defaults() -> None:
    """The Strategy page showed a gateway's RTT, batch window and batch size on a preset without one, and
    typing a value in switched a gateway on unsaid (TTFT p99 810 -> 817 ms: a review). Unset, the
    section is a toggle that is off; on, it adds a gateway from its defaults, and off removes it."""
    at = app("strategy")
    toggle = at.toggle(key="fg:on:network.gateway:False")
    assert toggle.value is False
    assert "Batch max" not in {n.label for n in at.number_input}
    toggle.set_value(True).run()
    assert_clean(at)
    gateway = scenario_of(at).network.gateway
    assert gateway is not None and gateway.batch_max == 16
    assert "Batch max" in {n.label for n in at.number_input}
    at.toggle(key="fg:on:network.gateway:True").set_value(False).run()
    assert_clean(at)
    assert scenario_of(at).network.gateway is None


def test_a_chip_number_out_of_range_is_said_by_its_label_with_the_range() -> None:
    """The custom-chip form passed no range for the chip's numbers, so 0 TB/s said nothing when typed,
    and Save answered 'tflops.bf16: Input should be less than or equal to 1000000 (got 5000000.0);
    memory_tb_s: ...' (a review). Typed, each says its label and range; saved, nothing is saved and
    the message names the form's labels."""
    at = app("hardware")
    sc = scenario_of(at)
    prefix = f"fg:chip:{sc.deployment.pools[0].hardware}:{sc.deployment.stack}:"
    at.number_input(key=f"{prefix}memory_tb_s").set_value(0.0).run()
    said = " ".join(text_of(m.value) for m in (*at.warning, *at.toast))
    assert "Memory (TB/s): 0 is not allowed: the allowed range is 0.001 to 100,000" in said, said
    at.number_input(key=f"{prefix}tflops_bf16").set_value(5_000_000.0).run()
    next(b for b in at.button if b.label == "Save chip to this scenario").click().run()
    assert not at.exception
    said = " ".join(text_of(m.value) for m in (*at.warning, *at.toast))
    assert (
        "custom chip not saved: BF16 TFLOP/s: 5,000,000 is not allowed: the allowed range is 0.01 to 1,000,000"
        in said
    )
    assert "tflops.bf16" not in said and not scenario_of(at).custom_hardware
    # one notice for the form, not the field's beside the Save's (one typo read as two banners: a review)
    banners = [text_of(w.value) for w in at.warning if "5,000,000 is not allowed" in text_of(w.value)]
    assert len(banners) == 1 and banners[0].startswith("custom chip not saved: "), banners
    # BF16's peak has one range, typed or saved: 0 passed the field's check ('0 to 1,000,000'), then Save
    # refused it as 'tflops.bf16 ... 0.01 to 1,000,000' (a review)
    at.number_input(key=f"{prefix}tflops_bf16").set_value(0.0).run()
    said = " ".join(text_of(m.value) for m in (*at.warning, *at.toast))
    assert "BF16 TFLOP/s: 0 is not allowed: the allowed range is 0.01 to 1,000,000" in said, said


def test_about_says_its_moe_terms_are_the_shared_ones_and_whose_are_their_own() -> None:
    """About's MoE terms (0.40 / 0.30 / 0.15 ms) beside a vLLM run's own (75% / 45% / 0.3 ms) on Results
    read as a disagreement (a review): About says its terms are the shared ones and which stacks have
    their own."""
    from engine.calibration import experts_stacks

    at = app("about")
    assert_clean(at)
    said = " ".join(text_of(m.value) for m in at.markdown)
    assert "These are the shared terms, which a stack without terms of its own runs with" in said
    assert experts_stacks() and "(SGLang, TensorRT-LLM, vLLM)" in said


def test_the_site_power_cap_is_told_from_a_pools() -> None:
    """The site's power cap sat among the deployment's fields labelled "Power cap (kW)", as each pool's
    (a browser review)."""
    at = app("strategy")
    assert_clean(at)
    site = at.number_input(key="fg:deployment.power_cap_kw")
    assert site.label == "Site power cap (kW)" and "every data-centre pool" in (site.help or "")
    assert at.number_input(key="fg:deployment.pools[0].power_cap_kw").label == "Power cap (kW)"
