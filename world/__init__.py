"""The pure, deterministic domain: AURATown, the memory stream, workspaces and apps.

No I/O, no threads, no wall clock, no global random state: time and randomness come in as
arguments. (The town itself arrives with the AURATown issue.)
"""
