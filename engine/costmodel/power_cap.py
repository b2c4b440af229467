"""A chip under a power limit: the clock it runs at, and what that clock does to its speed and power.

A power cap (``nvidia-smi -pl``) is enforced by the chip's firmware: it lowers the core clock
(and with it the voltage) until the chip draws no more than its limit. Dynamic power is
``C * V^2 * f``; near the nominal clock the voltage tracks the clock, so the core's share of
dynamic power falls as ``f^3``; below the voltage floor (``VOLTAGE_FLOOR_CLOCK``) only the clock
falls and that share goes as ``f``. Part of a busy chip's dynamic power does not follow the core
clock at all (HBM, I/O, the memory controller: ``FIXED_SHARE``). Anchored at the TDP (a chip
busy on compute-bound work draws its TDP at full clock, the state the calibration measured):

    (limit - idle) / (tdp - idle) = FIXED_SHARE + (1 - FIXED_SHARE) * g(f),
    g(f) = f^3 (f >= f_v),  f_v^2 * f (f < f_v)

solved for the clock factor f in (0, 1]. The relation is static and worst-case: it is the clock
of a chip running flat out on compute-bound work (prefill), and the run applies it to every
iteration of the pool (docs/decisions.md). What slows:

- compute: the achievable FLOP/s scale with f (the tensor cores run at the core clock);
- memory: HBM runs on its own clock, so achievable bandwidth holds until the cores are too slow
  to keep the loads in flight: ``min(1, f / BANDWIDTH_KNEE_CLOCK)``. Memory-bound decode thus
  hardly slows under a moderate cap, as measured (below);
- links, host overheads: unchanged.

The energy of the work changes with the clock too (`energy_scale`): the active power's clock-following
part goes as g(f) (its `FIXED_SHARE` not at all), the energy per FLOP as g(f) / f (V^2), the energy
per HBM byte not at all; the run's
energy is bounded by the limit instead of the TDP (`engine.costmodel.power.run_energy_j`).

Sources (docs/cost-model.md, "Power budgets"): Ma et al., "The Illusion of Power Capping in LLM
Decode" (arXiv 2605.11999, 2026): decode on an H200 draws 137-300 W of its 700 W, so caps above
that never trigger in decode, and locking the SM clock lower costs decode little throughput;
Patel et al., POLCA (arXiv 2308.12908): inference clusters run with power headroom and
capping them costs little performance; an RTX 3090 power-limit sweep (llmgarage.ai, 2026,
llama.cpp): prefill at 300/250/200/150 W of 350 W ran at 0.94/0.85/0.60/0.26 of its uncapped
speed, decode at 0.99/0.97/0.94/0.86. ``FIXED_SHARE`` and ``VOLTAGE_FLOOR_CLOCK`` are fitted
by eye to that prefill sweep (the relation gives 0.92/0.82/0.67/0.22 with the 3090's ~30 W
idle): assumption, one consumer GPU's measurement, illustrative.
"""

from __future__ import annotations

from engine.catalog.specs import HardwareSpec

FIXED_SHARE = 0.3
"""Share of a busy chip's dynamic power (TDP - idle) that does not follow the core clock (HBM,
I/O). Assumption: fitted by eye to the RTX 3090 prefill sweep (module docstring)."""
VOLTAGE_FLOOR_CLOCK = 0.7
"""Clock factor below which the voltage stays at its floor (core power then falls only as f).
Assumption: fitted with `FIXED_SHARE` to the same sweep."""
BANDWIDTH_KNEE_CLOCK = 0.5
"""Clock factor down to which achievable HBM bandwidth holds; below it bandwidth falls with the
clock. Assumption: decode kept 0.86 of its speed on the RTX 3090 at a clock the relation puts
near 0.2-0.5, and SM clock locking costs H200 decode little throughput (Ma et al.)."""
MIN_CLOCK = 0.3
"""The lowest clock factor a cap may impose: below it the relation leaves the measured range (the
3090's 100 W point ran decode at a sixth of its speed), so a tighter cap is refused."""


def core_power_share(clock: float) -> float:
    """g(f): the clock-following part of dynamic power at clock factor f, over its value at f = 1."""
    fv = VOLTAGE_FLOOR_CLOCK
    return clock**3 if clock >= fv else fv * fv * clock


def clock_at_limit(hw: HardwareSpec, limit_w: float) -> float:
    """The clock factor (0-1] of a chip held to `limit_w` watts while flat out (module docstring).

    1.0 at or above the TDP; 0.0 when the limit leaves no clock-following power (at or below
    idle plus the fixed share), which callers refuse.
    """
    span = hw.tdp_w - hw.idle_w
    if limit_w >= hw.tdp_w or span <= 0:
        return 1.0
    core = ((limit_w - hw.idle_w) / span - FIXED_SHARE) / (1.0 - FIXED_SHARE)
    if core <= 0.0:
        return 0.0
    fv = VOLTAGE_FLOOR_CLOCK
    return core ** (1.0 / 3.0) if core >= fv**3 else core / (fv * fv)


def limit_for_clock(hw: HardwareSpec, clock: float) -> float:
    """The power limit (W) at which a chip flat out runs at clock factor `clock` (the inverse)."""
    share = FIXED_SHARE + (1.0 - FIXED_SHARE) * core_power_share(clock)
    return hw.idle_w + (hw.tdp_w - hw.idle_w) * share


def bandwidth_factor(clock: float) -> float:
    """Achievable HBM bandwidth at clock factor f over full clock: holds down to the knee."""
    return min(1.0, clock / BANDWIDTH_KNEE_CLOCK)


def energy_scale(clock: float) -> tuple[float, float]:
    """(active power, energy per FLOP) at clock factor f over their values at full clock.

    The active power splits as the clock relation splits dynamic power: `FIXED_SHARE` of it does not
    follow the core (HBM, I/O) and the rest goes as g(f), so it is m + (1 - m) g(f) (until 2026-12-07 the
    whole of it went as g(f), which the relation itself says 30% does not: a review; power-capped-site's
    energy per token read 1.12 J, now 1.15); a FLOP's energy goes as V^2: g(f) / f. The energy per HBM
    byte does not change. Both are exactly 1.0 at f = 1.
    """
    if clock >= 1.0:
        return 1.0, 1.0
    g = core_power_share(clock)
    return FIXED_SHARE + (1.0 - FIXED_SHARE) * g, g / clock
