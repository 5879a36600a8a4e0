"""Incremental, torch-free validators for the file formats a training run leaves behind.

Every validator is fed the chunks of a single sequential read (the same chunks that are hashed)
and never holds more than a bounded amount of the file in memory.
"""
