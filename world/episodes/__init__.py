"""Proactive-assistant episodes (pi-Bench): pure task formats, apps, protocol and scoring."""
