"""Suites, sweeps, reports and the command line."""
