"""In-memory codecs (the contract in base.py), one file per library.
"""
