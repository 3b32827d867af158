"""The one rule book: the ranking and its verdicts, each throughput against its ceiling, the Amdahl fit.
"""
