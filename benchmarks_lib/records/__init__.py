"""The result record: tidy rows, parquet I/O, the durability vocabulary.
"""
