"""The data measured: seeded arrays, meshes, real example volumes, a person's own files, storage targets.
"""
