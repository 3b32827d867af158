"""What the suites share: blocks, timed I/O, verification, round trips, cutouts, eviction, twins.
"""
