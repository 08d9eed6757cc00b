"""The HTTP server on CPU with the tiny model: the OpenAI client library works against it, streams arrive in
order, a disconnect aborts its request, bad input gets a 4xx naming the field, overload a 429, and 100
concurrent streams all complete with Hugging Face's greedy tokens."""
import asyncio
import json
import time

import pytest
import torch

pytest.importorskip("fastapi")
httpx = pytest.importorskip("httpx")
openai = pytest.importorskip("openai")
uvicorn = pytest.importorskip("uvicorn")

from gpufolio_projects.inference_engine import LLM  # noqa: E402
from gpufolio_projects.inference_engine.config import CacheConfig, SchedulerConfig  # noqa: E402
from gpufolio_projects.inference_engine.serve.app import build_app  # noqa: E402
from gpufolio_projects.inference_engine.serve.inprocess import InProcessServer, http_online  # noqa: E402
from gpufolio_projects.inference_engine.serve.protocol import Tokenizer  # noqa: E402

NAME = "tiny-llama"
VOCAB = 97


def _word_tokenizer():
    """Token i is the word "t<i>": text prompts without a downloaded tokenizer; a chat template joins contents."""
    from tokenizers import Tokenizer as RawTokenizer
    from tokenizers.models import WordLevel
    from tokenizers.pre_tokenizers import WhitespaceSplit
    from transformers import PreTrainedTokenizerFast

    raw = RawTokenizer(WordLevel({f"t{i}": i for i in range(VOCAB)}, unk_token="t0"))
    raw.pre_tokenizer = WhitespaceSplit()
    tok = PreTrainedTokenizerFast(tokenizer_object=raw)
    tok.chat_template = "{% for m in messages %}{{ m['content'] }} {% endfor %}"
    return tok


@pytest.fixture(scope="module")
def server(hf_checkpoint):
    eng = LLM(hf_checkpoint[0], device="cpu", dtype="float32", max_model_len=128,
              cache=CacheConfig(block_size=4, num_blocks=96),
              scheduler=SchedulerConfig(max_num_seqs=32, max_num_batched_tokens=128, num_decode_steps=4))
    srv = InProcessServer(build_app(eng, NAME, Tokenizer(_word_tokenizer()), max_in_flight=200))
    srv.engine = eng
    yield srv
    srv.close()


@pytest.fixture()
def client(server):
    return openai.OpenAI(base_url=server.url + "/v1", api_key="unused", max_retries=0, timeout=60)


def _prompts(lens, seed=0):
    g = torch.Generator().manual_seed(seed)
    return [torch.randint(0, VOCAB, (n,), generator=g).tolist() for n in lens]


def _text(ids):
    return " ".join(f"t{i}" for i in ids)


def _idle(server, timeout=10.0):
    deadline = time.monotonic() + timeout
    eng = server.engine
    while server.app.state.loop.num_in_flight or eng.has_unfinished():
        assert time.monotonic() < deadline, "requests still in flight"
        time.sleep(0.02)
    return eng.block_manager.num_free_blocks == eng.block_manager.num_blocks


def test_openai_client_completion_with_token_ids_and_text(client, reference):
    prompt = _prompts([7], seed=1)[0]
    r = client.completions.create(model=NAME, prompt=prompt, max_tokens=12, temperature=0,
                                  extra_body={"ignore_eos": True})
    choice = r.choices[0]
    assert choice.token_ids == reference(prompt) and choice.text == _text(reference(prompt))
    assert choice.finish_reason == "length" and r.object == "text_completion" and r.model == NAME
    assert (r.usage.prompt_tokens, r.usage.completion_tokens) == (7, 12)
    by_text = client.completions.create(model=NAME, prompt=_text(prompt), max_tokens=12, temperature=0)
    assert by_text.choices[0].token_ids == reference(prompt)
    assert [m.id for m in client.models.list().data] == [NAME]


def test_openai_client_streams_tokens_in_order(client, reference):
    prompt = _prompts([9], seed=2)[0]
    chunks = list(client.completions.create(model=NAME, prompt=prompt, max_tokens=12, temperature=0, stream=True,
                                            stream_options={"include_usage": True}))
    token_chunks = [c for c in chunks if c.choices]
    assert [t for c in token_chunks for t in c.choices[0].token_ids] == reference(prompt)
    assert "".join(c.choices[0].text for c in token_chunks).strip() == _text(reference(prompt))
    assert [c.choices[0].finish_reason for c in token_chunks] == [None] * (len(token_chunks) - 1) + ["length"]
    assert chunks[-1].usage.completion_tokens == 12


def test_openai_client_chat_plain_and_streamed(client, reference):
    prompt = _prompts([5], seed=3)[0]
    messages = [{"role": "user", "content": _text(prompt)}]
    r = client.chat.completions.create(model=NAME, messages=messages, max_tokens=12, temperature=0)
    assert r.choices[0].message.role == "assistant" and r.choices[0].message.content == _text(reference(prompt))
    assert r.usage.prompt_tokens == 5
    parts = list(client.chat.completions.create(model=NAME, messages=messages, max_completion_tokens=12,
                                                temperature=0, stream=True))
    assert parts[0].choices[0].delta.role == "assistant"
    assert "".join(p.choices[0].delta.content or "" for p in parts).strip() == _text(reference(prompt))
    assert parts[-1].choices[0].finish_reason == "length"


def test_seeded_requests_over_http_repeat(client):
    kw = dict(model=NAME, prompt=[4, 5, 6], max_tokens=10, temperature=1.0, seed=7, extra_body={"ignore_eos": True})
    assert client.completions.create(**kw).choices[0].token_ids == client.completions.create(**kw).choices[0].token_ids


@pytest.mark.parametrize("body,status,param", [
    ({"model": NAME, "prompt": [1, VOCAB]}, 400, "prompt"),
    ({"model": NAME, "prompt": [-1]}, 400, "prompt"),
    ({"model": NAME, "prompt": []}, 400, "prompt"),
    ({"model": NAME}, 400, "prompt"),
    ({"model": NAME, "prompt": [[1], [2]]}, 400, "prompt"),
    ({"model": NAME, "prompt": list(range(1, 90)) * 2}, 400, "prompt"),
    ({"model": NAME, "prompt": [1], "max_tokens": "8"}, 400, "max_tokens"),
    ({"model": NAME, "prompt": [1], "max_tokens": 2.5}, 400, "max_tokens"),
    ({"model": NAME, "prompt": [1], "max_tokens": 0}, 400, "max_tokens"),
    ({"model": NAME, "prompt": [1], "temperature": -1}, 400, "temperature"),
    ({"model": NAME, "prompt": [1], "top_p": 2}, 400, "top_p"),
    ({"model": NAME, "prompt": [1], "n": 2}, 400, "n"),
    ({"model": "gpt-4", "prompt": [1]}, 404, "model"),
])
def test_bad_requests_get_an_openai_error_naming_the_field(server, body, status, param):
    r = httpx.post(server.url + "/v1/completions", json=body, timeout=30)
    assert r.status_code == status
    err = r.json()["error"]
    assert err["param"] == param and err["message"].startswith(param) and err["type"]
    assert _idle(server)


@pytest.mark.parametrize("path,body,param", [
    ("/v1/completions", b"{not json", None),
    ("/v1/completions", b"[1, 2]", None),
    ("/v1/chat/completions", b'{"model": "tiny-llama"}', "messages"),
    ("/v1/chat/completions", b'{"messages": [{"role": "user", "content": 3}]}', "messages"),
])
def test_malformed_bodies_get_a_400(server, path, body, param):
    r = httpx.post(server.url + path, content=body, headers={"content-type": "application/json"}, timeout=30)
    assert r.status_code == 400 and r.json()["error"]["param"] == param


def test_a_full_queue_answers_429(server):
    loop = server.app.state.loop
    limit, loop.max_in_flight = loop.max_in_flight, 0
    try:
        r = httpx.post(server.url + "/v1/completions", json={"model": NAME, "prompt": [1]}, timeout=30)
    finally:
        loop.max_in_flight = limit
    assert r.status_code == 429 and r.json()["error"]["type"] == "rate_limit_error" and r.headers["retry-after"]


def test_a_disconnected_stream_aborts_its_request(server, monkeypatch):
    step = server.engine.step

    def slow_step():  # 30 steps of 4 tokens would take ~1.5 s: the client leaves long before
        time.sleep(0.05)
        return step()

    monkeypatch.setattr(server.engine, "step", slow_step)
    before = _counter(server, 'engine_requests_total{finish_reason="abort"}')
    body = {"model": NAME, "prompt": [3, 1, 4], "max_tokens": 120, "temperature": 0, "stream": True,
            "ignore_eos": True}
    with httpx.stream("POST", server.url + "/v1/completions", json=body, timeout=30) as r:
        for line in r.iter_lines():
            if line.startswith("data: "):
                break  # one chunk, then hang up
    assert _idle(server)  # the abort freed its blocks
    assert _counter(server, 'engine_requests_total{finish_reason="abort"}') == before + 1


def _counter(server, name):
    text = httpx.get(server.url + "/metrics", timeout=30).text
    return next((float(line.split()[-1]) for line in text.splitlines() if line.startswith(name + " ")), 0.0)


def test_health_and_metrics(server, client):
    assert httpx.get(server.url + "/health", timeout=30).json()["status"] == "ok"
    client.completions.create(model=NAME, prompt=[2, 3], max_tokens=4, temperature=0)
    text = httpx.get(server.url + "/metrics", timeout=30).text
    for name in ("engine_requests_running", "engine_requests_waiting", "engine_kv_cache_usage",
                 "engine_generation_tokens_per_second", "engine_time_to_first_token_seconds_bucket",
                 "engine_time_per_output_token_seconds_count", "engine_e2e_request_latency_seconds_sum"):
        assert name in text
    assert _counter(server, "engine_time_to_first_token_seconds_count") >= 1


async def _stream_one(http, url, prompt, n):
    body = {"model": NAME, "prompt": prompt, "max_tokens": n, "temperature": 0, "stream": True, "ignore_eos": True}
    tokens, reasons, done = [], [], False
    async with http.stream("POST", url + "/v1/completions", json=body) as r:
        assert r.status_code == 200
        async for line in r.aiter_lines():
            if not line.startswith("data: "):
                continue
            if line == "data: [DONE]":
                done = True
                break
            choice = json.loads(line[6:])["choices"][0]
            tokens.extend(choice["token_ids"])
            reasons.append(choice["finish_reason"])
    assert done and reasons[-1] == "length" and set(reasons[:-1]) <= {None}
    return tokens


def test_100_concurrent_streams_complete_with_hf_tokens(server, reference):
    distinct = _prompts([3, 8, 13, 21, 5, 17, 30, 2, 11, 25], seed=4)
    g = torch.Generator().manual_seed(5)
    picks = torch.randint(0, len(distinct), (100,), generator=g).tolist()
    lens = torch.randint(1, 9, (100,), generator=g).tolist()

    async def run():
        async with httpx.AsyncClient(timeout=120, limits=httpx.Limits(max_connections=100)) as http:
            return await asyncio.gather(*(_stream_one(http, server.url, distinct[k], n) for k, n in zip(picks, lens)))

    t0 = time.perf_counter()
    from gpufolio_projects.inference_engine.serve.loadgen import run_sync

    outs = run_sync(run())
    assert time.perf_counter() - t0 < 90
    assert outs == [reference(distinct[k])[:n] for k, n in zip(picks, lens)]
    assert _idle(server)


def test_the_load_generator_sweeps_rates_against_the_server(server, tmp_path):
    from gpufolio_projects.inference_engine.serve import loadgen

    out = tmp_path / "sweep.jsonl"
    rc = loadgen.main(["--url", server.url, "--rates", "20,80", "--requests", "12", "--max-duration", "30",
                       "--input-len", "2:20", "--output-len", "1:6", "--json", str(out)])
    assert rc == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["rate"] for r in rows] == [20.0, 80.0]
    for r in rows:
        assert r["sent"] == r["completed"] == 12 and r["rejected_429"] == 0
        assert 0 < r["ttft_p50_ms"] <= r["ttft_p90_ms"] <= r["ttft_p99_ms"] and r["output_tok_per_s"] > 0
        assert 0 <= r["goodput_req_per_s"] <= r["req_per_s"]
    assert _idle(server)


@pytest.mark.parametrize("url", ["http://10.0.0.1:8000", "http://example.com", "http://192.168.1.2"])
def test_the_load_generator_refuses_anything_but_loopback(url, capsys):
    from gpufolio_projects.inference_engine.serve import loadgen

    assert loadgen.main(["--url", url]) == 2
    assert "only targets loopback" in capsys.readouterr().err


def test_http_online_replays_a_bench_workload_through_the_server(hf_checkpoint, reference):
    """The online bench's HTTP variant: the same requests as run_online, through the server and the client."""
    eng = LLM(hf_checkpoint[0], device="cpu", dtype="float32", max_model_len=128,
              cache=CacheConfig(block_size=4, num_blocks=64), scheduler=SchedulerConfig(max_num_seqs=8))
    prompts = _prompts([4, 12, 7, 20], seed=6)
    lens = [3, 12, 1, 5]
    stats = http_online(eng, prompts, lens, [0.0, 0.01, 0.02, 0.05])
    assert [s["token_ids"] for s in stats] == [reference(p)[:n] for p, n in zip(prompts, lens)]
    assert all(0 < s["ttft"] <= s["e2e"] and (s["tpot"] is None) == (n == 1) for s, n in zip(stats, lens))
    assert not eng.has_unfinished() and eng.block_manager.num_free_blocks == 64


def test_the_command_line(hf_checkpoint, tmp_path, capsys):
    import subprocess
    import sys

    from gpufolio_projects.inference_engine.serve.__main__ import main

    out = subprocess.run([sys.executable, "-m", "gpufolio_projects.inference_engine.serve", "--help"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and "--model" in out.stdout
    assert main(["--model", str(tmp_path)]) == 2
    assert "no config.json" in capsys.readouterr().err
    # a pool smaller than one max_model_len sequence is refused before the weights load
    assert main(["--model", hf_checkpoint[0], "--device", "cpu", "--max-model-len", "128", "--num-blocks", "2"]) == 2
    assert "num_blocks=2" in capsys.readouterr().err
    assert main(["--model", hf_checkpoint[0], "--device", "cpu", "--dtype", "float32", "--num-blocks", "512",
                 "--tokenizer", str(tmp_path / "none")]) == 2
    assert capsys.readouterr().err.startswith("error: --tokenizer")


def test_streamed_text_holds_back_a_split_character():
    from gpufolio_projects.inference_engine.serve.app import _text_delta

    class Bytes:  # token 0 is "é"'s first byte, token 1 its second
        hf = None

        def decode(self, ids):
            return bytes([0xC3, 0xA9][i] for i in ids).decode("utf-8", errors="replace")

    assert _text_delta(Bytes(), [0], "", finished=False) == ("", "")
    assert _text_delta(Bytes(), [0, 1], "", finished=False) == ("é", "é")
    assert _text_delta(Bytes(), [0], "", finished=True) == ("\ufffd", "\ufffd")
