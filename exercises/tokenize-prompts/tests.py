"""Tests for tokenize-prompts: TokenizeManager.ids and tokenize with the tiny models' byte-level BPE tokenizer
(a ChatML-style template set on it; a wrapper that adds a BOS by default), fixed corners, then random draws."""

from functools import lru_cache

from transformers import PreTrainedTokenizerFast  # at the top: the warm judge imports it once, before any judging

from judge.testing import rng
from minisgl.core import SamplingParams
from minisgl.message import ErrorMsg, TokenizeMsg, UserMsg
from minisgl.testing import tiny_model_name, tiny_models_dir
from minisgl.tokenizer.tokenize import TokenizeManager

BOS = 0  # <|endoftext|>: the wrapper below adds it where a tokenizer's defaults add a BOS
TEMPLATE = (
    "{% for m in messages %}"
    "{% if m['role'] not in ['system', 'user', 'assistant'] %}{{ raise_exception('unknown role: ' + m['role']) }}"
    "{% endif %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
WORDS = ["the", "cache", "pages", "request", "model", "token", "river", "blue", "seven", "prefix", "batch", "quiet",
         "running", "stream", "café", "naïve", "你好", "😀", "attention", "graph", "kernel", "decode"]
PARAMS = dict(temperature=0.7, top_k=20, top_p=0.9, max_tokens=13, seed=5)


@lru_cache(maxsize=1)
def tok():
    t = PreTrainedTokenizerFast.from_pretrained(str(tiny_models_dir() / tiny_model_name()))
    t.chat_template = TEMPLATE
    return t


class BosTokenizer:
    """The tiny tokenizer, but encode() adds a BOS unless add_special_tokens=False (like Llama's)."""

    def __init__(self) -> None:
        self.inner = tok()

    def encode(self, text, add_special_tokens=True, **kw):
        ids = list(self.inner.encode(text, add_special_tokens=False, **kw))
        return [BOS] + ids if add_special_tokens else ids

    def apply_chat_template(self, *args, **kw):
        return self.inner.apply_chat_template(*args, **kw)


class FailingTokenizer:
    """A tokenizer that cannot encode anything."""

    def encode(self, *args, **kw):
        raise RuntimeError("this tokenizer broke down")

    def apply_chat_template(self, *args, **kw):
        raise RuntimeError("this template broke down")


class QuotingTokenizer:
    """A tokenizer whose error text has quotes, a backslash and a newline (its repr() differs from its str())."""

    TEXT = 'can\'t encode "x" (see C:\\tokenizer)\nsecond line'

    def encode(self, *args, **kw):
        raise ValueError(self.TEXT)

    def apply_chat_template(self, *args, **kw):
        raise ValueError(self.TEXT)


def encode(text: str) -> list[int]:
    return list(tok().encode(text, add_special_tokens=False))


def rendered(messages: list[dict]) -> str:
    """What the template writes, computed here."""
    return "".join(f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n" for m in messages) + \
        "<|im_start|>assistant\n"


def request(prompt, *, chat=False, max_tokens=None, uid=None, **params) -> TokenizeMsg:
    uid = rng().randrange(100, 10_000) if uid is None else uid
    return TokenizeMsg(uid=uid, prompt=prompt, chat=chat, sampling_params=SamplingParams(**(PARAMS | params)),
                       max_tokens=max_tokens)


def run(msg: TokenizeMsg, ctx: int, tokenizer=None):
    out = TokenizeManager(tokenizer if tokenizer is not None else tok(), ctx).tokenize(msg)
    kind = type(out).__name__
    assert isinstance(out, (UserMsg, ErrorMsg)), f"tokenize returns a UserMsg or an ErrorMsg, not a {kind}"
    assert out.uid == msg.uid, f"the reply carries the request's uid {msg.uid}, not {out.uid}"
    return out


def accepted(msg: TokenizeMsg, ctx: int, ids: list[int], max_tokens: int, tokenizer=None, what: str = "") -> None:
    out = run(msg, ctx, tokenizer)
    note = f"{what}: " if what else ""
    err = out.message if isinstance(out, ErrorMsg) else ""
    assert isinstance(out, UserMsg), f"{note}a {len(ids)}-token prompt in a {ctx}-token context with max_tokens=" \
        f"{msg.max_tokens} must run; tokenize refused it: {err!r}"
    got = out.input_ids
    assert type(got) is list, f"{note}input_ids is a list, not a {type(got).__name__}"
    assert got == ids, f"{note}input_ids differ from the prompt's token ids"
    assert out.sampling_params.max_tokens == max_tokens, \
        f"{note}{len(ids)} prompt tokens, context {ctx}, request max_tokens={msg.max_tokens}: the UserMsg's " \
        f"max_tokens must be {max_tokens}"
    others = {k: getattr(out.sampling_params, k) for k in PARAMS if k != "max_tokens"}
    assert others == {k: v for k, v in PARAMS.items() if k != "max_tokens"}, \
        f"{note}every other field of sampling_params is the request's"


def refused(msg: TokenizeMsg, ctx: int, param: str, shows: tuple = (), tokenizer=None, what: str = "") -> str:
    out = run(msg, ctx, tokenizer)
    note = f"{what}: " if what else ""
    assert isinstance(out, ErrorMsg), f"{note}tokenize must refuse this request (param {param!r}), not run it"
    assert out.param == param, f"{note}the refusal's param must be {param!r}, not {out.param!r} ({out.message!r})"
    assert out.status == 400, f"{note}a refusal has status 400, not {out.status}"
    assert param in out.message, f"{note}the message must name {param!r}; it was {out.message!r}"
    for s in shows:
        assert str(s) in out.message, f"{note}the message must show {s}; it was {out.message!r}"
    return out.message


def test_example_completion_prompt_and_max_tokens():
    """A completion prompt in a 40-token context: max_tokens None takes the rest of the context, a given one is
    kept, one that overflows the context is refused on max_tokens."""
    ids = encode("the quiet river runs blue")
    n = len(ids)
    accepted(request("the quiet river runs blue"), 40, ids, 40 - n, what="max_tokens None")
    accepted(request("the quiet river runs blue", max_tokens=7), 40, ids, 7, what="max_tokens 7")
    accepted(request("the quiet river runs blue", max_tokens=40 - n), 40, ids, 40 - n,
             what="max_tokens exactly filling the context")
    refused(request("the quiet river runs blue", max_tokens=41 - n), 40, "max_tokens", (n, 41 - n, 40))


def test_example_prompt_filling_the_context():
    """A prompt of exactly max_seq_len tokens leaves no room for a new token: refused on the prompt; one token
    less runs and generates one token."""
    ids = [9, 301, 77, 145, 60, 222, 18]
    refused(request(list(ids)), 7, "prompt", (7,), what="7 ids in a 7-token context")
    refused(request(list(ids), max_tokens=3), 7, "prompt", (7,), what="7 ids in a 7-token context, max_tokens=3")
    accepted(request(list(ids)), 8, ids, 1, what="7 ids in an 8-token context")


def test_token_ids_are_a_list_of_their_own():
    """A token-id prompt runs as given, copied: changing the caller's list afterwards changes nothing."""
    g = rng()
    ids = [g.randrange(3, 512) for _ in range(g.randint(3, 12))]
    prompt = list(ids)
    msg = request(prompt, max_tokens=3)
    out = run(msg, 64)
    assert isinstance(out, UserMsg), "a short token-id prompt runs"
    prompt.append(401)
    prompt[0] = 402
    assert out.input_ids == ids, "input_ids must be a list of its own: the caller changed its list afterwards"


def test_completion_prompt_uses_the_tokenizer_defaults():
    """A completion string is encoded with the tokenizer's defaults: its BOS is there."""
    g = rng()
    text = " ".join(g.choice(WORDS) for _ in range(g.randint(2, 6)))
    ids = [BOS] + encode(text)
    accepted(request(text), 100, ids, 100 - len(ids), BosTokenizer(), what=f"{text!r} with a BOS tokenizer")
    accepted(request(text, max_tokens=4), 100, encode(text), 4, what=f"{text!r}")


def test_chat_messages_through_the_template():
    """Chat messages: the template's text with the assistant's turn opened, encoded without special tokens (no
    BOS added to the template's)."""
    g = rng()
    messages = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi there"}]
    ids = encode(rendered(messages))
    accepted(request(messages, chat=True), 60, ids, 60 - len(ids), what="a system and a user message")
    accepted(request(messages, chat=True, max_tokens=5), 60, ids, 5, BosTokenizer(),
             what="a tokenizer that adds a BOS by default: none is added to the template's text")
    messages = [{"role": g.choice(["user", "assistant"]), "content": " ".join(g.sample(WORDS, g.randint(1, 5)))}
                for _ in range(g.randint(1, 4))]
    ids = encode(rendered(messages))
    accepted(request(messages, chat=True), 200, ids, 200 - len(ids), BosTokenizer(), what=f"{messages}")


def test_chat_generation_prompt_opens_the_assistant_turn():
    """The template is applied with add_generation_prompt=True: the ids end with '<|im_start|>assistant\\n'."""
    messages = [{"role": "user", "content": "seven pages"}]
    out = run(request(messages, chat=True, max_tokens=2), 50)
    assert isinstance(out, UserMsg), "a short chat runs"
    tail = encode("<|im_start|>assistant\n")
    assert out.input_ids[-len(tail):] == tail, "the prompt must end by opening the assistant's turn"


def test_template_refusal_names_messages():
    """A role the template does not know: jinja's TemplateError becomes a refusal on 'messages' with its text."""
    g = rng()
    role = g.choice(["tool", "robot", "narrator"])
    messages = [{"role": "user", "content": "hi"}, {"role": role, "content": "x"}]
    refused(request(messages, chat=True), 100, "messages", (f"unknown role: {role}",))
    refused(request(messages, chat=True, max_tokens=2), 100, "messages", (f"unknown role: {role}",), BosTokenizer())


def test_any_exception_is_a_refusal():
    """Whatever the tokenizer raises, for either kind of prompt, is a refusal on that prompt's field."""
    refused(request("fine words", max_tokens=2), 50, "prompt", ("this tokenizer broke down",), FailingTokenizer())
    refused(request([{"role": "user", "content": "hi"}], chat=True), 50, "messages", ("broke down",),
            FailingTokenizer())
    for msg, field in ((request("fine words"), "prompt"), (request([{"role": "user", "content": "hi"}], chat=True),
                                                            "messages")):
        refused(msg, 50, field, (QuotingTokenizer.TEXT,), QuotingTokenizer(),
                what="an error text with quotes and a newline (str(e), not repr(e))")


def test_empty_prompts_are_refused():
    """No ids: an empty completion string (even with a BOS tokenizer) and an empty id list are refused."""
    refused(request(""), 50, "prompt", what="an empty string")
    refused(request("", max_tokens=3), 50, "prompt", tokenizer=BosTokenizer(),
            what="an empty string, with a tokenizer that adds a BOS")
    refused(request([]), 50, "prompt", what="an empty list of ids")
    refused(request([], max_tokens=4), 50, "prompt", what="an empty list of ids, max_tokens=4")


def test_only_no_ids_is_empty():
    """What encodes to ids is not empty: a prompt of whitespace is a prompt."""
    for text in (" ", "\n", "  \t "):
        accepted(request(text, max_tokens=3), 50, encode(text), 3, what=f"the whitespace prompt {text!r}")


def test_prompt_too_long():
    """n >= max_seq_len is refused on the prompt's field (the message shows n and the context), before max_tokens is
    looked at."""
    g = rng()
    ctx = g.randint(9, 30)
    for n in (ctx, ctx + 1, ctx + g.randint(2, 20)):
        ids = [g.randrange(3, 512) for _ in range(n)]
        refused(request(ids), ctx, "prompt", (n, ctx), what=f"{n} ids, context {ctx}")
        refused(request(ids, max_tokens=g.randint(1, 5)), ctx, "prompt", (n, ctx),
                what=f"{n} ids, context {ctx}, max_tokens given")
    messages = [{"role": "user", "content": " ".join(g.choice(WORDS) for _ in range(8))}]
    n = len(encode(rendered(messages)))
    refused(request(messages, chat=True, max_tokens=1), n, "messages", (n,), what=f"a {n}-token chat, context {n}")


def test_max_tokens_against_the_context():
    """n + max_tokens may equal max_seq_len, not exceed it; the refusal shows n, max_tokens and the context."""
    g = rng()
    for _ in range(6):
        ctx = g.randint(20, 90)
        n = g.randint(1, ctx - 2)
        ids = [g.randrange(3, 512) for _ in range(n)]
        fits = ctx - n
        accepted(request(ids, max_tokens=fits), ctx, ids, fits, what=f"{n} ids + max_tokens {fits} = context {ctx}")
        small = g.randint(1, fits)
        accepted(request(ids, max_tokens=small), ctx, ids, small, what=f"{n} ids, max_tokens {small}, context {ctx}")
        over = fits + g.randint(1, 9)
        refused(request(ids, max_tokens=over), ctx, "max_tokens", (n, over, ctx),
                what=f"{n} ids + max_tokens {over} > context {ctx}")
        messages = [{"role": "user", "content": " ".join(g.choice(WORDS) for _ in range(g.randint(1, 4)))}]
        m = len(encode(rendered(messages)))
        chat_ctx = m + g.randint(1, 10)
        over = chat_ctx - m + g.randint(1, 5)
        refused(request(messages, chat=True, max_tokens=over), chat_ctx, "max_tokens", (m, over, chat_ctx),
                what=f"a {m}-token chat + max_tokens {over} > context {chat_ctx}")


def test_default_max_tokens_is_the_rest_of_the_context():
    """max_tokens None: the request may generate up to the end of the context, max_seq_len - n (not the
    SamplingParams' own max_tokens)."""
    g = rng()
    for _ in range(5):
        ctx = g.randint(10, 120)
        n = g.randint(1, ctx - 1)
        ids = [g.randrange(3, 512) for _ in range(n)]
        accepted(request(ids), ctx, ids, ctx - n, what=f"{n} ids, context {ctx}, max_tokens None")


def test_sampling_params_are_copied_not_changed():
    """The UserMsg gets a copy: the request's SamplingParams object keeps its own max_tokens (13)."""
    g = rng()
    ids = [g.randrange(3, 512) for _ in range(g.randint(2, 9))]
    msg = request(ids, max_tokens=g.randint(1, 8))
    out = run(msg, 40)
    assert isinstance(out, UserMsg), "a short prompt runs"
    assert msg.sampling_params.max_tokens == PARAMS["max_tokens"], \
        "msg.sampling_params must be left unchanged (copy it with dataclasses.replace)"
    assert (out.sampling_params is msg.sampling_params) is False, "the UserMsg's sampling_params is a copy"


def test_random_requests():
    """Random completion, token-id and chat prompts against random contexts and max_tokens, checked by the rules
    computed here."""
    g = rng()
    for _ in range(25):
        kind = g.choice(["text", "ids", "chat"])
        if kind == "text":
            prompt = " ".join(g.choice(WORDS) for _ in range(g.randint(1, 8)))
            ids, field = encode(prompt), "prompt"
        elif kind == "ids":
            ids = [g.randrange(3, 512) for _ in range(g.randint(1, 30))]
            prompt, field = list(ids), "prompt"
        else:
            prompt = [{"role": g.choice(["user", "assistant", "system"]), "content": g.choice(WORDS)}
                      for _ in range(g.randint(1, 3))]
            ids, field = encode(rendered(prompt)), "messages"
        n = len(ids)
        ctx = g.randint(max(2, n - 3), n + 25)
        max_tokens = g.choice([None, g.randint(1, 30)])
        msg = request(prompt, chat=kind == "chat", max_tokens=max_tokens)
        what = f"{kind} prompt of {n} tokens, context {ctx}, max_tokens {max_tokens}"
        if n >= ctx:
            refused(msg, ctx, field, (n, ctx), what=what)
        elif max_tokens is not None and n + max_tokens > ctx:
            refused(msg, ctx, "max_tokens", (n, max_tokens, ctx), what=what)
        else:
            accepted(msg, ctx, ids, ctx - n if max_tokens is None else max_tokens, what=what)
