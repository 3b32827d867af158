"""Readers over HTTP and S3 for the cache chapter (the contract in base.py), one file per library.
"""
