"""The advisor's calibration findings (`engine.explain.advisor`): their numbers are the bands their
sentence quotes."""

from __future__ import annotations

from engine.explain.advisor import advise
from engine.explain.confidence import pool_marks, real_bands
from engine.explain.finding import number_rows
from engine.scenario import codec as io
from engine.serving.run import simulate


def test_an_uncalibrated_chips_numbers_are_the_bands_its_sentence_gives() -> None:
    # moe-deepseek-h200's finding read "band: throughput −43% to +76%, ..." above Numbers of "throughput
    # error 0.24, TTFT error 0.24, energy error 0.25": medians, unlabelled, and an energy error with no band
    res = simulate(io.apply_overrides(io.load_preset("moe-deepseek-h200"), {"duration_s": 30.0}))
    (found,) = [f for f in advise(res).findings if f.topic == "calibration"]
    cal = pool_marks(res.scenario, res.summary)[0].calibration
    bands = real_bands(cal)
    assert "energy" not in bands and set(bands) <= {"throughput", "ttft", "tpot"}
    rows = dict(number_rows(found.numbers))
    lo, hi = bands["throughput"]
    assert rows["throughput band low (%)"] == f"{lo:+.0%}".replace("-", "−")
    assert rows["throughput band high (%)"] == f"{hi:+.0%}"
    assert f"throughput {lo:+.0%}".replace("-", "−") in found.text  # the sentence's own figures
    assert not any("error" in k for k in found.numbers)


def test_a_band_past_a_doubling_reads_as_its_sentence_does() -> None:
    # decode-asic's sentence read "throughput −41% to > +100%" above a number of "+110%" (a review)
    res = simulate(io.apply_overrides(io.load_preset("decode-asic"), {"duration_s": 30.0}))
    found = [f for f in advise(res).findings if f.topic == "calibration"]
    rows = [dict(number_rows(f.numbers)) for f in found]
    assert any(r.get("throughput band high (%)") == "> +100%" for r in rows)
    assert all(
        "> +100%" in f.text
        for f in found
        if dict(number_rows(f.numbers)).get("throughput band high (%)") == "> +100%"
    )


def test_a_band_side_that_rounds_to_nothing_reads_as_its_sentence() -> None:
    # number_rows gave '−0%' where the sentence's side_text gives '+0%' (a review)
    from engine.explain.confidence import side_text

    rows = dict(number_rows({"throughput_band_high_pct": -0.004, "throughput_band_low_pct": -0.2}))
    assert rows["throughput band high (%)"] == side_text(-0.004) == "+0%"
    assert rows["throughput band low (%)"] == side_text(-0.2) == "−20%"
