"""The offline interface: LLM(model_path, ...).generate(prompts, sampling_params)."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from minisgl.core import SamplingParams, new_req
from minisgl.distributed import check_tp_size
from minisgl.distributed.ranks import RankGroup
from minisgl.engine import Engine, EngineConfig
from minisgl.models import ModelConfig
from minisgl.scheduler import Scheduler


class LLM:
    def __init__(self, model_path: str | Path, dtype: torch.dtype = torch.float32, max_running_req: int = 64,
                 num_page_override: int | None = None, max_seq_len_override: int | None = None, page_size: int = 1,
                 cache_type: str = "radix", attention_backend: str | None = None,
                 cuda_graph_max_bs: int | None = None, cuda_graph_bs: list[int] | None = None,
                 chunked_prefill_size: int = 4096, device: str | torch.device | None = None,
                 linear_backend: str = "auto", tp_size: int = 1, moe_backend: str | None = None) -> None:
        """``tp_size`` > 1: tensor parallelism, this process being rank 0 and the other ranks spawned processes
        (gloo on a CPU, NCCL on CUDA: one GPU per rank); ``shutdown()`` stops them."""
        config = EngineConfig(
            model_path=model_path, dtype=dtype, device=device, max_running_req=max_running_req,
            num_page_override=num_page_override, max_seq_len_override=max_seq_len_override, page_size=page_size,
            cache_type=cache_type, attention_backend=attention_backend, cuda_graph_max_bs=cuda_graph_max_bs,
            cuda_graph_bs=cuda_graph_bs, chunked_prefill_size=chunked_prefill_size, linear_backend=linear_backend,
            moe_backend=moe_backend,
        )
        self.model_path = Path(model_path)
        self._ranks: RankGroup | None = None
        if tp_size != 1:
            config.validate()
            check_tp_size(ModelConfig.from_path(model_path), tp_size)  # refused before any process starts
            self._ranks = RankGroup(config, tp_size)
        try:
            self.engine = Engine(config)
        except Exception as e:
            if self._ranks is not None:
                raise self._ranks.failed(e) from e
            raise
        self.scheduler = Scheduler(self.engine)
        self._tokenizer: Any = None
        self._uids = itertools.count()

    @property
    def tokenizer(self) -> Any:
        if self._tokenizer is None:
            from transformers import AutoTokenizer

            try:
                self._tokenizer = AutoTokenizer.from_pretrained(str(self.model_path))
            except (OSError, ValueError) as e:
                raise ValueError(f"{self.model_path}: no usable tokenizer ({e}); pass token ids instead") from None
        return self._tokenizer

    def _encode(self, prompts: Sequence[str] | Sequence[Sequence[int]]) -> list[list[int]]:
        if isinstance(prompts, (str, bytes)) or not isinstance(prompts, Sequence):
            raise TypeError("prompts must be a list of strings or a list of token-id lists")
        if len(prompts) == 0:
            raise ValueError("prompts is empty")
        out: list[list[int]] = []
        for i, prompt in enumerate(prompts):
            if isinstance(prompt, str):
                ids = list(self.tokenizer.encode(prompt)) if prompt else []
            elif isinstance(prompt, Sequence) and all(isinstance(t, int) for t in prompt):
                ids = list(prompt)
            else:
                raise TypeError(f"prompt {i}: expected a string or a list of ints, got {type(prompt).__name__}")
            if not ids:
                raise ValueError(f"prompt {i} is empty")
            out.append(ids)
        return out

    def generate(self, prompts: Sequence[str] | Sequence[Sequence[int]],
                 sampling_params: SamplingParams | Sequence[SamplingParams] | None = None) -> list[dict[str, Any]]:
        """One dict per prompt, in order: {'text': str, 'token_ids': list[int]} (the new tokens only).

        Prompts given as token ids get their text decoded only if the tokenizer is already loaded (loading it
        imports transformers, which token-id callers such as the judge do not need); otherwise 'text' is ''."""
        if self.engine.model is None:
            raise RuntimeError("this LLM was shut down")
        encoded = self._encode(prompts)
        want_text = self._tokenizer is not None or any(isinstance(p, str) for p in prompts)
        if sampling_params is None:
            sampling_params = SamplingParams()
        if isinstance(sampling_params, SamplingParams):
            params = [sampling_params] * len(encoded)
        else:
            params = list(sampling_params)
            if len(params) != len(encoded):
                raise ValueError(f"{len(params)} sampling params for {len(encoded)} prompts")
        for i, (ids, p) in enumerate(zip(encoded, params)):  # everything is checked before anything is queued
            if not isinstance(p, SamplingParams):
                raise TypeError(f"sampling_params[{i}] is a {type(p).__name__}, not SamplingParams")
            p.validate()
            refused = self.engine.refusal(ids, p.max_tokens)
            if refused is not None:
                raise ValueError(f"prompt {i}: {refused[0]}")
        work = [(list(ids), p, next(self._uids)) for ids, p in zip(encoded, params)]
        reqs = [new_req(ids, p, uid, self.engine.device) for ids, p, uid in work]
        for req in reqs:
            self.scheduler.add_request(req)
        if self._ranks is None:
            self.scheduler.run_until_idle()
        else:
            self._ranks.submit(work)  # every rank runs the same steps on the same requests
            try:
                self.scheduler.run_until_idle()
            except Exception as e:
                ranks, self._ranks = self._ranks, None
                self.engine.shutdown()
                raise ranks.failed(e) from e
        results = []
        for req in reqs:
            out = req.output_ids
            text = self._tokenizer.decode(out, skip_special_tokens=True) if want_text else ""
            results.append({"text": text, "token_ids": out})
        return results

    def shutdown(self) -> None:
        if self.engine.model is not None:
            self.engine.shutdown()
        if self._ranks is not None:
            self._ranks.close()
            self._ranks = None

