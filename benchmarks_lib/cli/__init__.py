"""The `iobench` command.
"""
