"""Mesh writers (the contract in base.py), one file per library.
"""
