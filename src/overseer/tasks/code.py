"""Scoring code completions, for the layers that build on the HumanEval-style tasks (the CodeGen
game runs a team's program through the same sandboxed check): the program a completion makes
with the task's tests, and its asynchronous score."""

from overseer.tasks._score import ascore_code, code_program

__all__ = ["ascore_code", "code_program"]
