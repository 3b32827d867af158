"""The book: its build, the generated pages, the front page, the notebooks read (never executed).
"""
