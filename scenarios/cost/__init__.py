"""Cost studies: one workload on several cluster designs — how many nodes of which type, bought spot,
on-demand or reserved — compared by dollars, dollars per useful GPU-hour, work lost and deadlines met.

Why on top of the simulator and not inside it: a design is just a scenario ``cluster`` block, so each run
is an ordinary ``placer simulate`` run of the same workload (same seed, same arrivals); what a study adds
is the bill (reserved paid whether used or not, on-demand and spot while used), spot reclaims (spot
nodes taken back, through the simulator's node failures), and deadlines (a study parameter: the job model
has none). ``docs/cost-studies.md`` states every definition; ``notebooks/02-cost-study.ipynb`` runs the
shipped study (``scenarios/library/cost/``).

==================  ===================================================================================
``design``          :class:`Design`, :class:`Pool`: nodes per machine type and capacity-class shares
``deadlines``       :class:`Deadline` and :func:`judge`: due at submit + stretch x work + slack
``reclaims``        :class:`SpotReclaim`: spot nodes reclaimed at random, work since the checkpoint lost
``billing``         :class:`Billing` and :func:`bill`: per node, price x hours billed
``study``           :func:`compare`, :func:`runs`, :func:`table`, :class:`Study` / :func:`load_study`
``plots``           the three figures of the notebook (matplotlib)
==================  ===================================================================================

One reserved DGX H100 node or four on-demand ones, for 30 simulated minutes of three 8-GPU jobs of 10
minutes that should be done within 5 minutes of their duration:

>>> from placer.scenarios.load import load_scenario_text
>>> workload = load_scenario_text('''
... name: three-jobs
... horizon: 30m
... interval: 1m
... cluster: {builders: [{dgx_h100: {count: 1}}]}
... workload: {jobs: [{id: a, ext_ml_gpu_count: 8, ext_ml_timeout_seconds: 600},
...                   {id: b, ext_ml_gpu_count: 8, ext_ml_timeout_seconds: 600},
...                   {id: c, ext_ml_gpu_count: 8, ext_ml_timeout_seconds: 600}]}
... ''')
>>> designs = [Design.of("one-reserved", 1, reserved=1.0), Design.of("four-on-demand", 4)]
>>> t = compare(designs, workload, deadlines={"on-demand": "5m"}, reclaim=None, verify=True)
>>> t[["cost_usd", "useful_gpu_h", "deadlines_due", "deadlines_met"]].round(2)
                cost_usd  useful_gpu_h  deadlines_due  deadlines_met
design
one-reserved       31.20           4.0            3.0            1.0
four-on-demand     49.16           4.0            3.0            3.0

The reserved node is paid for the whole half hour (8 x $7.80 x 0.5 h) and runs the jobs one after the
other; the on-demand nodes are paid only while the jobs run (3 x 8 x $12.29 x 10 min) and meet every
deadline.
"""

from placer.scenarios.cost.billing import Billing, bill
from placer.scenarios.cost.deadlines import Deadline, deadline_counts, judge
from placer.scenarios.cost.design import Design, Pool
from placer.scenarios.cost.reclaims import SpotReclaim, reclaims_of
from placer.scenarios.cost.study import Run, Study, compare, load_study, run_design, runs, table

__all__ = [
    "Billing",
    "Deadline",
    "Design",
    "Pool",
    "Run",
    "SpotReclaim",
    "Study",
    "bill",
    "compare",
    "deadline_counts",
    "judge",
    "load_study",
    "reclaims_of",
    "run_design",
    "runs",
    "table",
]
