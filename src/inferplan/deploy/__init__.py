"""How to launch a planned deployment: the engine's command line and a Kubernetes manifest.

Layer 5: imports catalog and memory, never report, store or shells.
"""

from inferplan.deploy.command import LaunchCommand, Speculative, launch_command
from inferplan.deploy.manifest import kubernetes_manifest

__all__ = ["LaunchCommand", "Speculative", "kubernetes_manifest", "launch_command"]
