"""presets/calibration.toml's tables that `calibrate --reference --write` writes beside the expected
errors (`engine.cli.validate.expected_error_toml`): the MoE first-token latency, the bands with their
out-of-sample coverage, and each chip's own published results as the shipped profiles predict them."""

from __future__ import annotations

from engine.calibration import bands, validation


def first_token_toml(rep: validation.Report) -> list[str]:
    """presets/calibration.toml's MoE first-token latency (`first_token.fit`), which every run of a MoE
    model pays on the way in: the shared figure, and each stack's own where two sources allow."""
    ft = rep.first_token
    if not ft.ids:
        return []
    lines = [
        "# MoE models: what a request's first token takes beyond the step model (a prefill without",
        "# CUDA graphs, the stack's front end), ms: the median of measured minus predicted over the",
        "# one-client MoE TTFTs, per stack where they come from two sources, else shared. A run pays",
        "# it on the way in, not on the chips (engine/calibration/first_token.py).",
        "[first_token]",
        f"shared_ms = {ft.shared_ms}",
        f'source = "fitted to {len(ft.ids)} one-client MoE TTFT measurements ({", ".join(ft.ids)})"',
        "",
    ]
    if ft.stacks:
        lines += ["[first_token.stacks]", *(f"{st} = {ms}" for st, ms in ft.stacks.items()), ""]
    return lines


def band_toml(rep: validation.Report) -> list[str]:
    """presets/calibration.toml's bands: per family, each group's [low, high] ratio predicted /
    measured and the out-of-sample coverage per kind (`engine.calibration.bands`)."""
    if not rep.band_tables:
        return []
    lines = [
        "# Bands (engine/calibration/bands.py): per family of held-out points, each group's 16th-84th",
        "# percentile ratio predicted / measured, widened; a group is 'model:basis:stack:chip:figure'",
        "# ('*' where pooled). Coverage: the share of held-out points inside, each source left out.",
        "",
    ]
    coverage = rep.band_coverage()
    e2e = rep.e2e_coverage()
    for fam, table in rep.band_tables.items():
        lines.append(f"[band_coverage.{fam}]")
        for figure, c in {**coverage.get(fam, {}), **({"e2e": e2e[fam]} if fam in e2e else {})}.items():
            lines += [f"{figure} = {round(c['coverage'], 3)}", f"{figure}_points = {int(c['points'])}"]
        lines += ["", f"[band.{fam}]"]
        lines += [f'"{key}" = [{b.low}, {b.high}]' for key, b in table.bands.items()]
        lines.append("")
    lines += [
        "# Each chip's own published results as the shipped profiles predict them (in sample): the 16th",
        "# and 84th percentile ratio predicted / measured (one or two points: their least and largest) and",
        "# the points. A band is widened to hold this range where it does not (engine/calibration/bands.py).",
        "",
        "[own_points]",
    ]
    lines += [
        f'"{key}" = [{lo}, {hi}, {n}]' for key, (lo, hi, n) in bands.own_points(rep.predictions).items()
    ]
    lines.append("")
    return lines
