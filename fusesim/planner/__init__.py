"""The planner: FlashFuser's search over fused schedules, and the baselines from the same machinery.

Public API (docs/CONTRACTS.md):
    plan_case(chain, hw, strategies=("unfused", "smem", "dsm"), top_k=1, require_buildable=False)
    best_plan(chain, hw, strategy) -> Plan, raises Infeasible
    analyze(plan, hw) -> Volumes; predict(plan, hw) -> Prediction
"""

from fusesim.planner.cost import Prediction, predict
from fusesim.planner.dataflow import Volumes, analyze
from fusesim.planner.search import Infeasible, PlanResult, ScoredPlan, SearchStats, best_plan, plan_case

__all__ = ["Infeasible", "PlanResult", "Prediction", "ScoredPlan", "SearchStats", "Volumes", "analyze", "best_plan",
           "plan_case", "predict"]
