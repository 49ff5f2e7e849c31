"""Reliability and security evidence suites (issue 8): properties, deadlines, faults, hostile inputs.

``benchmarks/reliability_numbers.py`` runs the same generators outside pytest and prints the figures.
"""
