"""Explaining results: findings, values the pages show, previews and reports.

Owns: `advisor` (findings from a run; `finding` the statement it makes, `pd_ratio` what it says
of a prefill pool's share of the instances), `asic` (the specialisation test: should a phase get its own
chip), `software` (porting costs and the test's software question), `rooflines` (each phase on each
chip's roofline; `roofline_chips` the Hardware page's roofline
at a layout that holds the model), `confidence` (calibration marks and the expected error of each figure),
`presentation` (the figures and frames the
dashboard draws), `previews` (what a setting will do before a run: length histograms, shipped
traces, deployments), `drill` (a scenario's faults under each fallback policy), `sustain` (how an
unsustainable run and its latencies are said), `tail_ends` (where the SLO page's curves stop),
`spread_rows` (Compare's band column from the runs' spreads), `report` (exports with provenance, the
validation table), `layers` (which layer decided it: each layer switched alone), `way_in`
(network and control-plane time as shares of TTFT), `scaled` (a run's autoscaling in a line),
`timeline_marks` (a run's faults as moments on its timeline),
`power_line` (a run's power caps, clocks and draw in a line) and `run_preview` (a run's preview:
the same requests over a shorter window, with its expected error).
May import: every lower package, up to engine.planning.

The face: `__all__` names what the packages above and the dashboard import, each loaded from its
module on first use (docs/architecture.md, Public API).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from engine.faces import lazy as _lazy

_BY_MODULE = {
    "targets": (
        "OTHER_TARGETS TARGET_JUDGED judged_apart cost_judged both_miss BOTH_MISS missing_side "
        "misses_slo target_differences targets_note under_first_token verdicts NOT_PAIRED"
    ),
    "advisor": "Advice Finding advise findings",
    "asic": "STABLE_MONTHS specialisation",
    "edge_findings": "at_the_edge latency_tops",
    "finding": "number_rows",
    "rooflines": "roofline_table",
    "software": "porting_lines",
    "confidence": (
        "BAND_NOTE e2e_band_note HEADLINE_SOURCES Limits PoolMark caveats chip_rows describe "
        "error_list errors_by_figure errors_text headline_range limits note partly pool_marks "
        "real_bands run_mark signed_text stack_name uncalibrated with_band"
    ),
    "run_bands": "Moves figure_band slo_band_note floor_band_note cliff_notes",
    "drill": "class_attainment degrade_note fallback_drill drill_behind_lines drill_ttft_text unchanged unchanged_text",
    "margin": "BOTH_FAIL CompareMargin RunMargin RunSpread figure_text run_spread",
    "presentation": (
        "ALL_CLASSES cache_figures cache_rates duration_text duration_unit target_text "
        "duration_places edge_line headline latency_cdfs scheduler_figures slo_tail slo_targets "
        "summary_rows tail_curves usd_decimals usd_text"
    ),
    "compare_table": "compare with_expected_error with_unit change_text compare_view cell_text minus",
    "pairing": "unpaired paired_cdfs paired_targets",
    "bill": "cost_basis cost_kinds cost_parts utilization_frame",
    "tail_ends": "tail_end_text",
    "spread_rows": "spread_errors",
    "previews": (
        "CHIP_NUMBERS PoolMemory arrival_histogram chip_options custom_chip default_speculation "
        "draft_models length_columns length_histogram length_stats pool_memory pool_summary "
        "rate_curve removal_effects shipped_traces tokens_histogram tokens_stats with_custom_chip with_edge_site "
        "with_model_fitted with_pool_added with_pool_removed without_custom_chip without_edge_site"
    ),
    "roofline_chips": "fitting_layout scenario_layout fitting_tp pool_chips roofline roofline_name",
    "trace_files": (
        "trace_format trace_problem idle_tail kept_text dense_note trace_notes over_context_text JSON_SUFFIXES"
    ),
    "mode_switch": "with_mode chips_changed split_text with_load_of unshared_edits",
    "band_judged": "inside_band inside_band_note",
    "layout_choices": "fitting_eps",
    "rate_scale": "peak_of rate_cap_rps runnable_duration_s runnable_rate_rps rate_stops",
    "engine.core.numbers": "round_down",
    "replicas": "Interval Replicas compare_with_noise seed_scenarios summarize",
    "report": (
        "MAX_MEASUREMENT_BYTES MEASUREMENT_COLUMN_HELP Recalibration csv_with_provenance "
        "example_measurements_csv EXAMPLE_PROFILE expected_error_frame file_name html_report "
        "parse_measurements png_with_text provenance recalibrate svg_with_metadata validation_table"
    ),
    "sustain": (
        "GROWS HEADROOM LEVEL level marked at_least latency line rising_line saturated within_only answered_note"
    ),
    "engine.serving.summary": "shortfall_rps latency_shortfall LatencyKind rate_span_s",
    "layers": "LAYERS LayerEffect LayerView effects_table layer_view",
    "way_in": "way_in_line client_line",
    "scaled": "autoscale_line",
    "timeline_marks": "FaultMark fault_marks fault_notes unmet_faults met_faults met_faults_note",
    "power_line": "power_cap_line mean_power_line",
    "run_preview": (
        "PREVIEW_ERROR PREVIEW_REQUESTS RunPreview measure_preview_error preview_error_text preview_of"
    ),
}
"""Each module of the package (or of a lower one, by its path) and the names the face loads from it (`_API`)."""
_API = {
    name: module
    if "." in module
    else f"engine.explain.{module}"  # (a module of a lower package: its own path)
    for module, names in _BY_MODULE.items()
    for name in names.split()
}
_RENAMED: dict[str, str] = {"drill_behind_lines": "behind_lines", "drill_ttft_text": "ttft_text"}

__all__ = [
    "ALL_CLASSES",
    "BAND_NOTE",
    "BOTH_FAIL",
    "BOTH_MISS",
    "CHIP_NUMBERS",
    "EXAMPLE_PROFILE",
    "GROWS",
    "HEADLINE_SOURCES",
    "HEADROOM",
    "JSON_SUFFIXES",
    "LAYERS",
    "LEVEL",
    "MAX_MEASUREMENT_BYTES",
    "MEASUREMENT_COLUMN_HELP",
    "NOT_PAIRED",
    "OTHER_TARGETS",
    "PREVIEW_ERROR",
    "PREVIEW_REQUESTS",
    "STABLE_MONTHS",
    "TARGET_JUDGED",
    "Advice",
    "CompareMargin",
    "FaultMark",
    "Finding",
    "Interval",
    "LatencyKind",
    "LayerEffect",
    "LayerView",
    "Limits",
    "Moves",
    "PoolMark",
    "PoolMemory",
    "Recalibration",
    "Replicas",
    "RunMargin",
    "RunPreview",
    "RunSpread",
    "advise",
    "answered_note",
    "arrival_histogram",
    "at_least",
    "at_the_edge",
    "autoscale_line",
    "both_miss",
    "cache_figures",
    "cache_rates",
    "caveats",
    "cell_text",
    "change_text",
    "chip_options",
    "chip_rows",
    "chips_changed",
    "class_attainment",
    "client_line",
    "cliff_notes",
    "compare",
    "compare_view",
    "compare_with_noise",
    "cost_basis",
    "cost_judged",
    "cost_kinds",
    "cost_parts",
    "csv_with_provenance",
    "custom_chip",
    "default_speculation",
    "degrade_note",
    "dense_note",
    "describe",
    "draft_models",
    "drill_behind_lines",
    "drill_ttft_text",
    "duration_places",
    "duration_text",
    "duration_unit",
    "e2e_band_note",
    "edge_line",
    "effects_table",
    "error_list",
    "errors_by_figure",
    "errors_text",
    "example_measurements_csv",
    "expected_error_frame",
    "fallback_drill",
    "fault_marks",
    "fault_notes",
    "figure_band",
    "figure_text",
    "file_name",
    "findings",
    "fitting_eps",
    "fitting_layout",
    "fitting_tp",
    "floor_band_note",
    "headline",
    "headline_range",
    "html_report",
    "idle_tail",
    "inside_band",
    "inside_band_note",
    "judged_apart",
    "kept_text",
    "latency",
    "latency_cdfs",
    "latency_shortfall",
    "latency_tops",
    "layer_view",
    "length_columns",
    "length_histogram",
    "length_stats",
    "level",
    "limits",
    "line",
    "marked",
    "mean_power_line",
    "measure_preview_error",
    "met_faults",
    "met_faults_note",
    "minus",
    "misses_slo",
    "missing_side",
    "note",
    "number_rows",
    "over_context_text",
    "paired_cdfs",
    "paired_targets",
    "parse_measurements",
    "partly",
    "peak_of",
    "png_with_text",
    "pool_chips",
    "pool_marks",
    "pool_memory",
    "pool_summary",
    "porting_lines",
    "power_cap_line",
    "preview_error_text",
    "preview_of",
    "provenance",
    "rate_cap_rps",
    "rate_curve",
    "rate_span_s",
    "rate_stops",
    "real_bands",
    "recalibrate",
    "removal_effects",
    "rising_line",
    "roofline",
    "roofline_name",
    "roofline_table",
    "round_down",
    "run_mark",
    "run_spread",
    "runnable_duration_s",
    "runnable_rate_rps",
    "saturated",
    "scenario_layout",
    "scheduler_figures",
    "seed_scenarios",
    "shipped_traces",
    "shortfall_rps",
    "signed_text",
    "slo_band_note",
    "slo_tail",
    "slo_targets",
    "specialisation",
    "split_text",
    "spread_errors",
    "stack_name",
    "summarize",
    "summary_rows",
    "svg_with_metadata",
    "tail_curves",
    "tail_end_text",
    "target_differences",
    "target_text",
    "targets_note",
    "tokens_histogram",
    "tokens_stats",
    "trace_format",
    "trace_notes",
    "trace_problem",
    "uncalibrated",
    "unchanged",
    "unchanged_text",
    "under_first_token",
    "unmet_faults",
    "unpaired",
    "unshared_edits",
    "usd_decimals",
    "usd_text",
    "utilization_frame",
    "validation_table",
    "verdicts",
    "way_in_line",
    "with_band",
    "with_custom_chip",
    "with_edge_site",
    "with_expected_error",
    "with_load_of",
    "with_mode",
    "with_model_fitted",
    "with_pool_added",
    "with_pool_removed",
    "with_unit",
    "within_only",
    "without_custom_chip",
    "without_edge_site",
]


__getattr__, __dir__ = _lazy(__name__, _API, _RENAMED, __all__, globals())


if TYPE_CHECKING:
    from engine.core.numbers import round_down
    from engine.explain.advisor import Advice, Finding, advise, findings
    from engine.explain.asic import STABLE_MONTHS, specialisation
    from engine.explain.band_judged import inside_band, inside_band_note
    from engine.explain.bill import cost_basis, cost_kinds, cost_parts, utilization_frame
    from engine.explain.compare_table import (
        cell_text,
        change_text,
        compare,
        compare_view,
        minus,
        with_expected_error,
        with_unit,
    )
    from engine.explain.confidence import (
        BAND_NOTE,
        HEADLINE_SOURCES,
        Limits,
        PoolMark,
        caveats,
        chip_rows,
        describe,
        e2e_band_note,
        error_list,
        errors_by_figure,
        errors_text,
        headline_range,
        limits,
        note,
        partly,
        pool_marks,
        real_bands,
        run_mark,
        signed_text,
        stack_name,
        uncalibrated,
        with_band,
    )
    from engine.explain.drill import behind_lines as drill_behind_lines
    from engine.explain.drill import class_attainment, degrade_note, fallback_drill, unchanged, unchanged_text
    from engine.explain.drill import ttft_text as drill_ttft_text
    from engine.explain.edge_findings import at_the_edge, latency_tops
    from engine.explain.finding import number_rows
    from engine.explain.layers import LAYERS, LayerEffect, LayerView, effects_table, layer_view
    from engine.explain.layout_choices import fitting_eps
    from engine.explain.margin import BOTH_FAIL, CompareMargin, RunMargin, RunSpread, figure_text, run_spread
    from engine.explain.mode_switch import chips_changed, split_text, unshared_edits, with_load_of, with_mode
    from engine.explain.pairing import paired_cdfs, paired_targets, unpaired
    from engine.explain.power_line import mean_power_line, power_cap_line
    from engine.explain.presentation import (
        ALL_CLASSES,
        cache_figures,
        cache_rates,
        duration_places,
        duration_text,
        duration_unit,
        edge_line,
        headline,
        latency_cdfs,
        scheduler_figures,
        slo_tail,
        slo_targets,
        summary_rows,
        tail_curves,
        target_text,
        usd_decimals,
        usd_text,
    )
    from engine.explain.previews import (
        CHIP_NUMBERS,
        PoolMemory,
        arrival_histogram,
        chip_options,
        custom_chip,
        default_speculation,
        draft_models,
        length_columns,
        length_histogram,
        length_stats,
        pool_memory,
        pool_summary,
        rate_curve,
        removal_effects,
        shipped_traces,
        tokens_histogram,
        tokens_stats,
        with_custom_chip,
        with_edge_site,
        with_model_fitted,
        with_pool_added,
        with_pool_removed,
        without_custom_chip,
        without_edge_site,
    )
    from engine.explain.rate_scale import (
        peak_of,
        rate_cap_rps,
        rate_stops,
        runnable_duration_s,
        runnable_rate_rps,
    )
    from engine.explain.replicas import Interval, Replicas, compare_with_noise, seed_scenarios, summarize
    from engine.explain.report import (
        EXAMPLE_PROFILE,
        MAX_MEASUREMENT_BYTES,
        MEASUREMENT_COLUMN_HELP,
        Recalibration,
        csv_with_provenance,
        example_measurements_csv,
        expected_error_frame,
        file_name,
        html_report,
        parse_measurements,
        png_with_text,
        provenance,
        recalibrate,
        svg_with_metadata,
        validation_table,
    )
    from engine.explain.roofline_chips import (
        fitting_layout,
        fitting_tp,
        pool_chips,
        roofline,
        roofline_name,
        scenario_layout,
    )
    from engine.explain.rooflines import roofline_table
    from engine.explain.run_bands import Moves, cliff_notes, figure_band, floor_band_note, slo_band_note
    from engine.explain.run_preview import (
        PREVIEW_ERROR,
        PREVIEW_REQUESTS,
        RunPreview,
        measure_preview_error,
        preview_error_text,
        preview_of,
    )
    from engine.explain.scaled import autoscale_line
    from engine.explain.software import porting_lines
    from engine.explain.spread_rows import spread_errors
    from engine.explain.sustain import (
        GROWS,
        HEADROOM,
        LEVEL,
        at_least,
        latency,
        level,
        line,
        marked,
        rising_line,
        saturated,
        within_only,
    )
    from engine.explain.tail_ends import tail_end_text
    from engine.explain.targets import (
        BOTH_MISS,
        NOT_PAIRED,
        OTHER_TARGETS,
        TARGET_JUDGED,
        both_miss,
        cost_judged,
        judged_apart,
        misses_slo,
        missing_side,
        target_differences,
        targets_note,
        under_first_token,
        verdicts,
    )
    from engine.explain.timeline_marks import (
        FaultMark,
        fault_marks,
        fault_notes,
        met_faults,
        met_faults_note,
        unmet_faults,
    )
    from engine.explain.trace_files import (
        JSON_SUFFIXES,
        dense_note,
        idle_tail,
        kept_text,
        over_context_text,
        trace_format,
        trace_notes,
        trace_problem,
    )
    from engine.explain.way_in import client_line, way_in_line
    from engine.serving.summary import LatencyKind, latency_shortfall, rate_span_s, shortfall_rps
