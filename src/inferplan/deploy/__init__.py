"""How to launch a planned deployment: the engine's command line and a Kubernetes manifest.

Layer 5: imports catalog and memory, never report, store or shells.
"""

from inferplan.deploy.command import LaunchCommand, Speculative, engine_takes, launch_command
from inferplan.deploy.manifest import LaunchPlan, kubernetes_manifest, launch_plan
from inferplan.deploy.pools import PoolsLaunch, pools_launch

__all__ = ["LaunchCommand", "LaunchPlan", "Speculative", "engine_takes", "kubernetes_manifest", "launch_command", "launch_plan",
           "PoolsLaunch", "pools_launch"]
