"""gpufolio: the harness that checks, times and stamps GPU benchmarks, and the generator of the portfolio site.

Flow (../DESIGN): projects/<p>/bench.py -> gpufolio harness -> projects/<p>/results/*.jsonl -> render -> site.
"""
__version__ = "0.1.0"

from . import project_facts

# The folders under projects/ with a project.py, in their stated ORDER (project_facts: nothing here names one).
PROJECTS = project_facts.names()
