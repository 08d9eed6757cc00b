"""The OpenAI wire format: request bodies -> (prompt, sampling fields); engine output -> response bodies.

Sampling fields are passed through as the client sent them, so the engine's own admission checks judge them and
name the field (a ``"temperature": "0.7"`` is refused as a string, not parsed). Responses carry the completion's
``token_ids`` in every choice (an extension, as vLLM's ``return_token_ids``); ``text`` is empty when the server
has no tokenizer.
"""
from __future__ import annotations

import json
import time
from typing import Any, Optional

# Fields passed to SamplingParams under the same name (top_k, seed and ignore_eos are vLLM's extensions).
SAMPLING_FIELDS = ("temperature", "top_p", "top_k", "seed", "ignore_eos")
# OpenAI fields this server does not implement: refused unless absent or at their default.
UNSUPPORTED = {"n": 1, "best_of": 1, "echo": False, "logprobs": None, "top_logprobs": None, "suffix": None,
               "stop": None, "logit_bias": None, "tools": None, "tool_choice": None, "response_format": None}
COMPLETIONS_DEFAULT_MAX_TOKENS = 16  # OpenAI's default for /v1/completions


class HTTPError(Exception):
    def __init__(self, status: int, message: str, param: Optional[str] = None, type_: str = "invalid_request_error"):
        super().__init__(message)
        self.status, self.param, self.type = status, param, type_


def error_body(message: str, type_: str, param: Optional[str] = None) -> dict:
    return {"error": {"message": message, "type": type_, "param": param, "code": None}}


def parse_json(raw: bytes) -> dict:
    try:
        body = json.loads(raw)
    except ValueError as e:
        raise HTTPError(400, f"body: not valid JSON ({e})") from None
    if not isinstance(body, dict):
        raise HTTPError(400, f"body: must be a JSON object, got {type(body).__name__}")
    return body


def _check_unsupported(body: dict) -> None:
    for name, default in UNSUPPORTED.items():
        value = body.get(name)
        if value is not None and value != default and value != []:
            raise HTTPError(400, f"{name}: not supported by this server (only {default!r})", name)


def _sampling(body: dict, max_tokens_field: Any, default_max_tokens: int) -> dict:
    fields = {k: body[k] for k in SAMPLING_FIELDS if body.get(k) is not None}
    fields["max_tokens"] = default_max_tokens if max_tokens_field is None else max_tokens_field
    return fields


class Tokenizer:
    """A Hugging Face tokenizer, or none: then prompts are token ids and responses carry no text."""

    def __init__(self, hf_tokenizer=None):
        self.hf = hf_tokenizer

    def encode(self, text: str, param: str) -> list[int]:
        if self.hf is None:
            raise HTTPError(400, f"{param}: text needs a tokenizer; send token ids, or start the server with "
                                 "--tokenizer", param)
        return self.hf.encode(text, add_special_tokens=False)

    def decode(self, ids: list[int]) -> str:
        return "" if self.hf is None else self.hf.decode(ids, skip_special_tokens=True)

    def chat_prompt(self, messages: list[dict]) -> list[int]:
        if self.hf is None or not getattr(self.hf, "chat_template", None):
            raise HTTPError(400, "messages: chat needs a tokenizer with a chat template (start the server with "
                                 "--tokenizer)", "messages")
        text = self.hf.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
        return self.hf.encode(text, add_special_tokens=False)


def parse_completion(body: dict, tokenizer: Tokenizer) -> tuple[Any, dict]:
    """-> (the prompt as token ids, or as sent when it is malformed: admission names it; sampling fields)."""
    _check_unsupported(body)
    if "prompt" not in body:
        raise HTTPError(400, "prompt: required", "prompt")
    prompt = body["prompt"]
    if isinstance(prompt, list) and len(prompt) == 1 and isinstance(prompt[0], (str, list)):
        prompt = prompt[0]  # a batch of one
    elif isinstance(prompt, list) and prompt and all(isinstance(p, (str, list)) for p in prompt):
        raise HTTPError(400, f"prompt: one prompt per request, got a batch of {len(prompt)}", "prompt")
    if isinstance(prompt, str):
        prompt = tokenizer.encode(prompt, "prompt")
    return prompt, _sampling(body, body.get("max_tokens"), COMPLETIONS_DEFAULT_MAX_TOKENS)


def parse_chat(body: dict, tokenizer: Tokenizer, max_model_len: int) -> tuple[list[int], dict]:
    _check_unsupported(body)
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise HTTPError(400, "messages: required, a non-empty list of {role, content}", "messages")
    flat = []
    for i, m in enumerate(messages):
        if not isinstance(m, dict) or not isinstance(m.get("role"), str):
            raise HTTPError(400, f"messages[{i}]: must be an object with a role", "messages")
        content = m.get("content")
        if isinstance(content, list):  # content parts: only text
            if not all(isinstance(p, dict) and p.get("type") == "text" for p in content):
                raise HTTPError(400, f"messages[{i}].content: only text parts are supported", "messages")
            content = "".join(p.get("text", "") for p in content)
        if not isinstance(content, str):
            raise HTTPError(400, f"messages[{i}].content: must be a string", "messages")
        flat.append({"role": m["role"], "content": content})
    max_tokens = body.get("max_completion_tokens", body.get("max_tokens"))
    # no limit given: until EOS or max_model_len, as OpenAI's chat endpoint does up to the context length
    return tokenizer.chat_prompt(flat), _sampling(body, max_tokens, max_model_len)


# -- responses ---------------------------------------------------------------------------------------------------
def _usage(num_prompt: int, num_completion: int) -> dict:
    return {"prompt_tokens": num_prompt, "completion_tokens": num_completion,
            "total_tokens": num_prompt + num_completion}


def completion_body(rid: str, model: str, token_ids: list[int], text: str, finish_reason: Optional[str],
                    num_prompt: int, chunk: bool = False) -> dict:
    body = {"id": rid, "object": "text_completion", "created": int(time.time()), "model": model,
            "choices": [{"index": 0, "text": text, "logprobs": None, "finish_reason": finish_reason,
                         "token_ids": token_ids}]}
    if not chunk:
        body["usage"] = _usage(num_prompt, len(token_ids))
    return body


def chat_body(rid: str, model: str, token_ids: list[int], text: str, finish_reason: Optional[str],
              num_prompt: int) -> dict:
    return {"id": rid, "object": "chat.completion", "created": int(time.time()), "model": model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                         "logprobs": None, "finish_reason": finish_reason, "token_ids": token_ids}],
            "usage": _usage(num_prompt, len(token_ids))}


def chat_chunk(rid: str, model: str, token_ids: list[int], delta: dict, finish_reason: Optional[str]) -> dict:
    return {"id": rid, "object": "chat.completion.chunk", "created": int(time.time()), "model": model,
            "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason,
                         "token_ids": token_ids}]}


def usage_chunk(rid: str, model: str, obj: str, num_prompt: int, num_completion: int) -> dict:
    return {"id": rid, "object": obj, "created": int(time.time()), "model": model, "choices": [],
            "usage": _usage(num_prompt, num_completion)}


def sse(data: dict | str) -> str:
    return f"data: {data if isinstance(data, str) else json.dumps(data)}\n\n"
