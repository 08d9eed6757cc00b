import os

# CPU tests run on 2 cores: keep each rank of the 2-rank gloo tests to one thread.
os.environ.setdefault("OMP_NUM_THREADS", "1")
