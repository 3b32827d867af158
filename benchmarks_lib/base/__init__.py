"""The foundations every layer uses: the parameter vocabulary, paths, statistics, entry points, the environment,
scratch, signals, terminal text, redaction and reading untrusted files.
"""
