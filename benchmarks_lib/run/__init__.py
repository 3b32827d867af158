"""Running a plan: the runner, the executor, the worker and its pool, the Dask cluster, preflight checks.
"""
