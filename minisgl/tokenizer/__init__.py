"""Tokenizer and detokenizer workers (the book's chapter 13)."""

from minisgl.tokenizer.detokenize import IncrementalDetokenizer
from minisgl.tokenizer.tokenize import TokenizeManager

__all__ = ["IncrementalDetokenizer", "TokenizeManager"]
