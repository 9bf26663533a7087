"""Language models behind one interface: greedy generation and next-token option probabilities.

Backends:

* :class:`LlamaCppModel` — llama-cpp-python on a GGUF file (the offline SmolLM2 and Qwen models:
  0.15–1.4 s to load, 25+ tokens/s on 2 CPU cores; layers offloaded to the GPU when CUDA is there);
* :class:`TransformersModel` — any Hugging Face id or folder, causal or seq2seq (Flan-T5 of the paper),
  GGUF through ``gguf_file`` (dequantised), batched, fp16 on CUDA, greedy or beam search.

Decoding is deterministic (greedy unless ``num_beams > 1``): in Fair RAG the only randomness is the
retriever's (Kim & Diaz 2025, §3.3.2). Answers stop at the first line break (the prompts ask for a
short answer). Weights load lazily on first use, never at import.
"""

from __future__ import annotations

import os
import threading
from abc import ABC, abstractmethod
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import InvalidParameterError, ModelUnavailableError
from .device import resolve_device

__all__ = ["ChatPrompt", "LanguageModel", "LlamaCppModel", "TokenUsage", "TransformersModel", "softmax_options"]


@dataclass(frozen=True)
class ChatPrompt:
    """A system instruction and a user message; chat models render them with their own template."""

    system: str
    user: str

    def as_text(self) -> str:
        """Plain rendering for models without a chat template (e.g. Flan-T5)."""
        return f"{self.system}\n\n{self.user}" if self.system else self.user

    def messages(self) -> list[dict[str, str]]:
        out = [{"role": "system", "content": self.system}] if self.system else []
        return out + [{"role": "user", "content": self.user}]


@dataclass
class TokenUsage:
    """What a llama-cpp model has computed: calls, prompt tokens evaluated and reused, tokens generated.

    On a CPU the time of a call is close to linear in ``prompt_tokens`` and ``generated_tokens``; ``reused_tokens``
    are prompt tokens served from the KV cache of the previous prompt (its longest common prefix) or from a kept
    prefix state (see :meth:`LlamaCppModel.option_probabilities`).
    """

    calls: int = 0
    prompt_tokens: int = 0
    reused_tokens: int = 0
    generated_tokens: int = 0

    def add(self, prompt: int, reused: int, generated: int = 0) -> None:
        self.calls += 1
        self.prompt_tokens += prompt
        self.reused_tokens += reused
        self.generated_tokens += generated

    def snapshot(self) -> TokenUsage:
        return TokenUsage(self.calls, self.prompt_tokens, self.reused_tokens, self.generated_tokens)

    def __add__(self, other: TokenUsage) -> TokenUsage:
        return TokenUsage(self.calls + other.calls, self.prompt_tokens + other.prompt_tokens,
                          self.reused_tokens + other.reused_tokens, self.generated_tokens + other.generated_tokens)

    def __sub__(self, other: TokenUsage) -> TokenUsage:
        return TokenUsage(self.calls - other.calls, self.prompt_tokens - other.prompt_tokens,
                          self.reused_tokens - other.reused_tokens, self.generated_tokens - other.generated_tokens)


def common_prefix(previous: Sequence[int], tokens: Sequence[int]) -> int:
    """Tokens of ``tokens`` that llama-cpp serves from the KV cache of ``previous``.

    The longest common prefix, at most ``len(tokens) - 1``: the last token is always evaluated again
    because its logits are needed.

    >>> common_prefix([1, 2, 3, 4], [1, 2, 9]), common_prefix([1, 2], [1, 2])
    (2, 1)
    """
    limit = min(len(previous), len(tokens) - 1)
    if limit <= 0:
        return 0
    same = np.asarray(previous[:limit]) == np.asarray(tokens[:limit])
    return int(limit if same.all() else same.argmin())


def softmax_options(logits: np.ndarray) -> np.ndarray:
    shifted = np.asarray(logits, dtype=np.float64) - np.max(logits)
    weights = np.exp(shifted)
    return weights / weights.sum()


class LanguageModel(ABC):
    """What the generator, the NLI judge and the query refiner need from a language model."""

    name: str
    backend: str

    @property
    @abstractmethod
    def device(self) -> str:
        """Where the weights run (``cpu``, ``cuda``, ...)."""

    @abstractmethod
    def generate(self, prompts: Sequence[ChatPrompt], *, max_new_tokens: int = 64) -> list[str]:
        """Deterministic completions, one per prompt, stripped of surrounding whitespace."""

    @abstractmethod
    def option_probabilities(self, prompt: ChatPrompt, options: Sequence[str], *, keep_prefix: str = "") -> np.ndarray:
        """P(answer starts with option i), renormalised over ``options``, from next-token logits.

        Options must differ in their first token (e.g. ``entailment``/``neutral``/``contradiction``).
        ``keep_prefix`` is a start of ``prompt.user`` that later prompts will repeat (a judged document):
        a backend with a KV cache may keep its state to serve them; others ignore it.
        """


def _check_options(first_tokens: Sequence[int], options: Sequence[str]) -> None:
    if len(set(first_tokens)) != len(first_tokens):
        raise InvalidParameterError(f"options {list(options)} share a first token; use options that start differently")


class LlamaCppModel(LanguageModel):
    """A GGUF model run by llama-cpp-python, with the chat template stored in the GGUF file."""

    backend = "llama-cpp"

    def __init__(self, path: str | Path, *, name: str | None = None, n_ctx: int = 4096,
                 n_threads: int | None = None, device: str | None = None, seed: int = 0,
                 kept_states_mb: float = 1024) -> None:
        self.path = Path(path)
        self.name = name or self.path.stem
        self.n_ctx = n_ctx
        self.n_threads = n_threads or max(1, min(os.cpu_count() or 1, 8))
        self.requested_device = device
        self.seed = seed
        self._llm = None
        self._formatter = None
        self._lock = threading.Lock()
        self.usage = TokenUsage()
        # KV states of kept prompt prefixes (see option_probabilities), least recently used first
        self.kept_states_mb = kept_states_mb
        self._kept: OrderedDict[tuple[int, ...], bytes] = OrderedDict()

    @property
    def device(self) -> str:
        wanted = resolve_device(self.requested_device)
        return "cuda" if wanted.startswith("cuda") else "cpu"

    @property
    def loaded(self) -> bool:
        """Whether the weights are in memory (they load on first use)."""
        return self._llm is not None

    def close(self) -> None:
        """Free the weights now (llama-cpp's own finaliser fails if it runs during interpreter shutdown)."""
        with self._lock:
            if self._llm is not None:
                self._llm.close()
                self._llm, self._formatter = None, None

    def _load(self):
        if self._llm is None:
            try:
                from llama_cpp import Llama
            except ImportError as err:
                raise ModelUnavailableError(
                    "llama-cpp-python is not installed; run `make install` (it compiles in about 5 minutes)"
                ) from err
            gpu_layers = -1 if self.device == "cuda" else 0
            self._llm = Llama(model_path=str(self.path), n_ctx=self.n_ctx, n_threads=self.n_threads,
                              n_gpu_layers=gpu_layers, seed=self.seed, verbose=False)
        return self._llm

    def _render(self, prompt: ChatPrompt) -> str:
        """The chat prompt as text, ending where the assistant's reply starts."""
        if self._formatter is None:
            from llama_cpp.llama_chat_format import Jinja2ChatFormatter

            llm = self._load()
            template = llm.metadata.get("tokenizer.chat_template")
            if not template:
                self._formatter = False
            else:
                def token_text(token: int) -> str:
                    return llm.detokenize([token], special=True).decode("utf-8", "ignore") if token >= 0 else ""

                self._formatter = Jinja2ChatFormatter(template=template, eos_token=token_text(llm.token_eos()),
                                                      bos_token=token_text(llm.token_bos()))
        if self._formatter is False:
            return prompt.as_text() + "\n"
        return self._formatter(messages=prompt.messages()).prompt

    def generate(self, prompts: Sequence[ChatPrompt], *, max_new_tokens: int = 64) -> list[str]:
        with self._lock:
            llm = self._load()
            # Prompt processing dominates on CPU (≈ 220 tokens/s for SmolLM2 on 2 cores), and llama-cpp reuses the
            # KV cache of the longest common prefix with the previous prompt: visit prompts in sorted order so
            # that lists sharing their first documents run back to back.
            out = [""] * len(prompts)
            for i in self.prefix_order(prompts):
                previous = llm.input_ids[: llm.n_tokens].tolist()
                reply = llm.create_chat_completion(messages=prompts[i].messages(), temperature=0.0, top_k=1,
                                                   max_tokens=max_new_tokens, seed=self.seed, stop=["\n"])
                out[i] = (reply["choices"][0]["message"]["content"] or "").strip()
                # llama-cpp's own prompt (it may add a BOS): the prefix it reused is the common one with the last
                prompt_ids = llm.input_ids[: reply["usage"]["prompt_tokens"]].tolist()
                reused = common_prefix(previous, prompt_ids)
                self.usage.add(len(prompt_ids) - reused, reused, reply["usage"]["completion_tokens"])
            return out

    @staticmethod
    def prefix_order(prompts: Sequence[ChatPrompt]) -> list[int]:
        """Indices of ``prompts`` in sorted order: prompts that share a prefix run back to back."""
        return sorted(range(len(prompts)), key=lambda i: (prompts[i].system, prompts[i].user))

    def option_probabilities(self, prompt: ChatPrompt, options: Sequence[str], *, keep_prefix: str = "") -> np.ndarray:
        with self._lock:
            llm = self._load()
            text = self._render(prompt)
            tokens = llm.tokenize(text.encode("utf-8"), add_bos=False, special=True)
            if len(tokens) >= self.n_ctx:
                raise InvalidParameterError(f"prompt has {len(tokens)} tokens, over the context of {self.n_ctx}")
            firsts = [llm.tokenize(o.encode("utf-8"), add_bos=False, special=False)[0] for o in options]
            _check_options(firsts, options)
            self._evaluate(tokens, self._kept_length(text, tokens, keep_prefix))
            return softmax_options(self._last_logits()[firsts])

    def _kept_length(self, text: str, tokens: list[int], keep_prefix: str) -> int:
        """How many leading tokens of ``tokens`` render ``keep_prefix`` (and what comes before it), or 0."""
        end = text.find(keep_prefix) if keep_prefix else -1
        if end < 0:
            return 0
        head = self._load().tokenize(text[: end + len(keep_prefix)].encode("utf-8"), add_bos=False, special=True)
        # the tokens of the head alone may merge differently at its very end: keep what agrees, and leave at
        # least one token to evaluate (its logits are the answer)
        return min(common_prefix(head, tokens[: len(head) + 1]), len(tokens) - 1)

    def _evaluate(self, tokens: list[int], kept: int) -> None:
        """Bring the KV cache to ``tokens``, reusing what it can; keep the state after ``tokens[:kept]``.

        llama-cpp keeps the KV cache of the previous prompt, so a common prefix costs nothing. Beyond that,
        kept prefix states (e.g. the judge's instruction and document, ~190 tokens, ~3 s on 2 CPU cores) are
        restored instead of evaluated again when a later prompt starts with them (~7 MB each for Qwen-1.5B,
        dropped least recently used past ``kept_states_mb``).
        """
        llm = self._load()
        prefix = common_prefix(llm.input_ids[: llm.n_tokens], tokens)
        evaluated = 0
        if kept > prefix:
            key = tuple(tokens[:kept])
            state = self._kept.get(key)
            if state is not None:
                self._kept.move_to_end(key)
                self._restore_state(state, tokens[:kept])
            else:
                llm.n_tokens = prefix
                self._eval(tokens[prefix:kept])
                evaluated = kept - prefix
                self._keep_state(key)
            prefix = kept
        llm.n_tokens = prefix
        self._eval(tokens[prefix:])
        evaluated += len(tokens) - prefix
        self.usage.add(evaluated, len(tokens) - evaluated)

    def _eval(self, tokens: list[int]) -> None:
        self._llm.eval(tokens)

    def _last_logits(self) -> np.ndarray:
        # Without logits_all (n_ctx × vocab floats) llama-cpp keeps only the last position's logits in the
        # context; read them there.
        llm = self._llm
        return np.asarray(np.ctypeslib.as_array(llm._ctx.get_logits(), shape=(llm.n_vocab(),)), dtype=np.float64)

    def _keep_state(self, key: tuple[int, ...]) -> None:
        # The low-level state calls: Llama.save_state also copies its n_batch × n_vocab score buffer (~300 MB).
        import ctypes

        import llama_cpp

        ctx = self._llm._ctx.ctx
        size = llama_cpp.llama_state_get_size(ctx)
        buffer = (ctypes.c_uint8 * size)()
        used = llama_cpp.llama_state_get_data(ctx, buffer, size)
        self._kept[key] = ctypes.string_at(buffer, used)
        budget = self.kept_states_mb * 1e6
        while self._kept and sum(map(len, self._kept.values())) > budget:
            self._kept.popitem(last=False)

    def _restore_state(self, state: bytes, tokens: list[int]) -> None:
        import ctypes

        import llama_cpp

        buffer = (ctypes.c_uint8 * len(state)).from_buffer_copy(state)
        if llama_cpp.llama_state_set_data(self._llm._ctx.ctx, buffer, len(state)) != len(state):
            raise RuntimeError("llama-cpp could not restore a kept KV state")
        self._llm.input_ids[: len(tokens)] = tokens
        self._llm.n_tokens = len(tokens)


class TransformersModel(LanguageModel):
    """A Hugging Face causal or seq2seq model (any hub id or local folder; ``gguf_file`` for GGUF)."""

    backend = "transformers"

    def __init__(self, source: str, *, name: str | None = None, gguf_file: str | None = None,
                 device: str | None = None, batch_size: int = 8, num_beams: int = 1,
                 max_input_tokens: int = 2048) -> None:
        if batch_size < 1 or num_beams < 1:
            raise InvalidParameterError("batch_size and num_beams must be ≥ 1")
        self.source = source
        self.name = name or source
        self.gguf_file = gguf_file
        self.requested_device = device
        self.batch_size = batch_size
        self.num_beams = num_beams
        self.max_input_tokens = max_input_tokens
        self._model = None
        self._tokenizer = None
        self._lock = threading.Lock()

    @property
    def loaded(self) -> bool:
        """Whether the weights are in memory (they load on first use)."""
        return self._model is not None

    @property
    def device(self) -> str:
        return resolve_device(self.requested_device)

    @property
    def is_seq2seq(self) -> bool:
        return bool(self._load()[0].config.is_encoder_decoder)

    def _load(self):
        if self._model is None:
            import torch
            from transformers import AutoConfig, AutoModelForCausalLM, AutoModelForSeq2SeqLM, AutoTokenizer

            from .catalog import hub_load_kwargs

            kwargs = hub_load_kwargs()
            if self.gguf_file:
                kwargs["gguf_file"] = self.gguf_file
            try:
                config = AutoConfig.from_pretrained(self.source, **kwargs)
                tokenizer = AutoTokenizer.from_pretrained(self.source, **kwargs)
            except (OSError, ValueError) as err:
                raise ModelUnavailableError(
                    f"cannot load {self.source!r} ({err.__class__.__name__}). Without the Hugging Face hub use an "
                    "offline model (smollm2-135m, qwen2.5-1.5b) or a local folder"
                ) from err
            device = self.device
            dtype = torch.float16 if device.startswith("cuda") else torch.float32
            loader = AutoModelForSeq2SeqLM if config.is_encoder_decoder else AutoModelForCausalLM
            model = loader.from_pretrained(self.source, dtype=dtype, **kwargs).to(device).eval()
            if tokenizer.pad_token is None:
                tokenizer.pad_token = tokenizer.eos_token
            tokenizer.padding_side = "left" if not config.is_encoder_decoder else "right"
            self._model, self._tokenizer = model, tokenizer
        return self._model, self._tokenizer

    def _texts(self, prompts: Sequence[ChatPrompt]) -> list[str]:
        model, tokenizer = self._load()
        if not model.config.is_encoder_decoder and getattr(tokenizer, "chat_template", None):
            return [tokenizer.apply_chat_template(p.messages(), tokenize=False, add_generation_prompt=True)
                    for p in prompts]
        return [p.as_text() for p in prompts]

    def generate(self, prompts: Sequence[ChatPrompt], *, max_new_tokens: int = 64) -> list[str]:
        import torch

        with self._lock:
            model, tokenizer = self._load()
            texts = self._texts(prompts)
            order = sorted(range(len(texts)), key=lambda i: len(texts[i]))  # similar lengths per batch
            out: list[str] = [""] * len(texts)
            for start in range(0, len(order), self.batch_size):
                idx = order[start : start + self.batch_size]
                batch = tokenizer([texts[i] for i in idx], return_tensors="pt", padding=True, truncation=True,
                                  max_length=self.max_input_tokens, add_special_tokens=model.config.is_encoder_decoder)
                batch = {k: v.to(model.device) for k, v in batch.items()}
                with torch.no_grad():
                    generated = model.generate(**batch, max_new_tokens=max_new_tokens, do_sample=False,
                                               num_beams=self.num_beams, pad_token_id=tokenizer.pad_token_id)
                if not model.config.is_encoder_decoder:
                    generated = generated[:, batch["input_ids"].shape[1]:]
                for i, seq in zip(idx, generated):
                    out[i] = tokenizer.decode(seq, skip_special_tokens=True).strip()
            return out

    def option_probabilities(self, prompt: ChatPrompt, options: Sequence[str], *, keep_prefix: str = "") -> np.ndarray:
        import torch

        with self._lock:
            model, tokenizer = self._load()
            text = self._texts([prompt])[0]
            enc = tokenizer(text, return_tensors="pt", truncation=True, max_length=self.max_input_tokens,
                            add_special_tokens=model.config.is_encoder_decoder).to(model.device)
            firsts = [tokenizer(o, add_special_tokens=False)["input_ids"][0] for o in options]
            _check_options(firsts, options)
            with torch.no_grad():
                if model.config.is_encoder_decoder:
                    start = torch.full((1, 1), model.config.decoder_start_token_id, device=model.device)
                    logits = model(**enc, decoder_input_ids=start).logits[0, -1]
                else:
                    logits = model(**enc).logits[0, -1]
            return softmax_options(logits.float().cpu().numpy()[firsts])
