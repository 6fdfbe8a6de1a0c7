"""Chapter 18: the CUDA Graph emulation on a CPU, with padding, replay, and what happens when one input is not copied.

Runs on the tiny Qwen3 test model (made, not downloaded: minisgl.testing.tiny_model)."""

import torch

from minisgl.core import SamplingParams
from minisgl.engine.graph import GraphCaptureBuffer
from minisgl.env import ENV
from minisgl.llm import LLM
from minisgl.testing import tiny_model

ENV.DISABLE_OVERLAP_SCHEDULING.value = True
PROMPTS = ["The capital of France is", "List three prime numbers:", "def fibonacci(n):"]
KW = dict(dtype=torch.float32, max_running_req=8, num_page_override=512, max_seq_len_override=128, device="cpu")
MODEL = tiny_model("qwen3")


def run(cuda_graph_max_bs):
    llm = LLM(MODEL, cuda_graph_max_bs=cuda_graph_max_bs, **KW)
    runner = llm.engine.graph_runner
    log = []
    orig = runner.replay
    runner.replay = lambda b: (log.append(f"{b.size}->{b.padded_size}"), orig(b))[1]
    out = llm.generate(PROMPTS, SamplingParams(max_tokens=6, ignore_eos=True))
    sizes = sorted(runner.graph_map)
    llm.shutdown()
    return [o["token_ids"] for o in out], sizes, log


eager, _, _ = run(0)
graph, sizes, log = run(4)
print("recorded batch sizes:", sizes)
print("the replay of each decode step (real batch size -> padded):", log)
print("matches the output without a graph:", graph == eager)

orig_copy = GraphCaptureBuffer.copy_from


def buggy_copy_from(self, batch):  # positions was left out
    s = slice(batch.padded_size)
    self.input_ids[s] = batch.input_ids
    self.out_loc[s] = batch.out_loc


GraphCaptureBuffer.copy_from = buggy_copy_from
wrong, _, _ = run(4)
GraphCaptureBuffer.copy_from = orig_copy
print("matches the correct output after positions was not copied:", wrong == eager)
print("  correct:", eager[0])
print("  wrong:", wrong[0])
