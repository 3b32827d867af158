"""`iobench advise`: the workload, the evidence that answers it, the plan of `--measure`, the words.
"""
