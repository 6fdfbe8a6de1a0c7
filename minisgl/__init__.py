"""mini-sglang, CPU first: a small LLM inference engine whose greedy output equals Hugging Face's."""

__version__ = "0.1.0"
