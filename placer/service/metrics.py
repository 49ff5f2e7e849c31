"""Prometheus metrics of the service (``GET /metrics``), in a registry of its own per app.

Why a registry per app and not prometheus-client's global one: tests (and an embedding program) create
several apps in one process; with the global registry the second app would fail to register its
metrics, and two services would count into each other. Nothing here is module-level state.

What is measured: requests by route template (never the raw path: cluster ids would explode the label
set), method and status; request latency by route; requests in flight; decisions by the engine that
answered; the optimality gap and the solver's wall time of each decision; jobs placed, pending, rejected
and evicted; clusters held in stateful mode.

>>> m = Metrics()
>>> m.observe_request("/healthz", "GET", 200, 0.001)
>>> b'placer_http_requests_total{method="GET",route="/healthz",status="200"} 1.0' in m.render()
True
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST

from placer.solver.decision import Decision

__all__ = ["CONTENT_TYPE", "GAP_BUCKETS", "LATENCY_BUCKETS", "Metrics"]

#: Latency buckets (seconds): placements take milliseconds (greedy) to the time limit (CP-SAT).
LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
#: Gap buckets: 0 is proven optimal.
GAP_BUCKETS = (0.0, 0.001, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0)

CONTENT_TYPE = CONTENT_TYPE_LATEST


class Metrics:
    """The service's metrics and their exposition."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.requests = Counter(
            "placer_http_requests", "HTTP requests answered", ["route", "method", "status"], registry=r
        )
        self.latency = Histogram(
            "placer_http_request_duration_seconds",
            "Time from request to response",
            ["route"],
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.in_flight = Gauge("placer_http_requests_in_flight", "Requests being answered", registry=r)
        self.decisions = Counter("placer_decisions", "Decisions made, by engine", ["engine"], registry=r)
        self.gap = Histogram(
            "placer_decision_gap",
            "Relative gap to the bound of each decision",
            buckets=GAP_BUCKETS,
            registry=r,
        )
        self.wall = Histogram(
            "placer_decision_wall_seconds",
            "Wall time of place() per decision",
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.jobs = Counter(
            "placer_jobs",
            "Jobs answered, by outcome (placed, pending, rejected, evicted)",
            ["outcome"],
            registry=r,
        )
        self.clusters = Gauge("placer_clusters_stored", "Clusters held in stateful mode", registry=r)

    def observe_request(self, route: str, method: str, status: int, seconds: float) -> None:
        """One answered request."""
        self.requests.labels(route=route, method=method, status=str(status)).inc()
        self.latency.labels(route=route).observe(seconds)

    def observe_decision(self, decision: Decision) -> None:
        """One decision: engine, gap, wall time, and the jobs it answered."""
        s = decision.stats
        self.decisions.labels(engine=s.engine).inc()
        if s.gap is not None:
            self.gap.observe(s.gap)
        self.wall.observe(s.wall_s)
        self.jobs.labels(outcome="placed").inc(len(decision.placements))
        self.jobs.labels(outcome="pending").inc(len(decision.pending))
        self.jobs.labels(outcome="rejected").inc(len(decision.rejected))
        self.jobs.labels(outcome="evicted").inc(len(decision.preemptions))

    def render(self) -> bytes:
        """The Prometheus text exposition."""
        return generate_latest(self.registry)
