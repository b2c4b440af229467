"""Scheduling policies, each a registered class deciding from a read-only view.

Owns: `registry` (Policy, register, build, the views), `routers`, `queues` (queue orders),
`admission`, `iteration` (how an iteration mixes prompts and decodes) and `scaling` (autoscalers:
how many instances a pool wants). Importing the package registers every built-in policy; a new one is one class with
``@register`` in the module of its kind. Only the simulation (engine.serving) turns decisions
into events.
May import: engine.core.
"""

from engine.policies.admission import Admission, AdmitAll, build_admission
from engine.policies.iteration import STACK_SCHEDULER, IterationScheduler, build_iteration
from engine.policies.queues import Fcfs, QueueOrder, StrictPriority, build_queue
from engine.policies.registry import (
    InstanceView,
    Policy,
    PolicyKind,
    RequestView,
    build,
    knob_fields,
    left_knobs,
    register,
    registered,
)
from engine.policies.routers import LeastLoaded, Router, build_router
from engine.policies.scaling import Autoscaler, PoolLoad, build_autoscaler

__all__ = [
    "STACK_SCHEDULER",
    "Admission",
    "AdmitAll",
    "Autoscaler",
    "Fcfs",
    "InstanceView",
    "IterationScheduler",
    "LeastLoaded",
    "Policy",
    "PolicyKind",
    "PoolLoad",
    "QueueOrder",
    "RequestView",
    "Router",
    "StrictPriority",
    "build",
    "build_admission",
    "build_autoscaler",
    "build_iteration",
    "build_queue",
    "build_router",
    "knob_fields",
    "left_knobs",
    "register",
    "registered",
]
