"""Offline optima for the multipath deadline problem.

This subpackage will hold the OR-Tools models (conservative and relaxed MILPs and the LP
bound), the replay of an optimal schedule in the packet simulator, and a small exhaustive
solver used as a test oracle.
"""
