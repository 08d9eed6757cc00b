"""An OpenAI-compatible streaming HTTP server on the engine, and a load generator for it.

    python -m gpufolio_projects.inference_engine.serve --model DIR [--tokenizer DIR] --port 8000
    python -m gpufolio_projects.inference_engine.serve.loadgen --url http://127.0.0.1:8000 --rates 1,2,4,8

``app.py`` holds the routes, ``protocol.py`` the OpenAI wire format, ``engine_loop.py`` the one task that owns the
engine, ``metrics.py`` the Prometheus metrics, ``loadgen.py`` the client. Needs the ``serve`` extra.
"""
