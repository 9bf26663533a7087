"""llama-cpp-python backend: GGUF models (the offline SmolLM2 and Qwen) with KV-cache prefix reuse.

0.15–1.4 s to load, 25+ tokens/s on 2 CPU cores; every layer is offloaded to the GPU when CUDA is present.
Greedy decoding; answers stop at the first line break. Prompt processing dominates on a CPU, so the backend
reuses the KV cache of the longest common prefix with the previous prompt and can keep the state after a
prompt's head (a judged document) to restore it later instead of evaluating it again.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np

from ..errors import InvalidParameterError, ModelUnavailableError
from .batching import BatchedDecoder
from .device import resolve_device
from .llm import (
    ChatPrompt,
    Completion,
    Decoding,
    LanguageModel,
    TokenUsage,
    check_context,
    check_options,
    common_prefix,
    prefix_order,
    softmax_options,
)
from .queue import ModelLock
from .threads import ThreadChoice, model_threads

__all__ = ["DEFAULT_SLOTS", "LlamaCppModel"]

#: Answers the batching engine decodes at once (:mod:`.batching`); on a CPU 8 tokens cost about 2 steps of 1.
DEFAULT_SLOTS = 8
#: KV cells of each slot: a 5-document prompt and its answer need ~1,000; longer prompts (RichRAG's 320-token
#: answers over many documents) go one at a time on the model's own context. 8 × 2,048 cells take 200 MB of KV
#: cache for Qwen2.5-0.5B, 460 MB for Qwen2.5-1.5B.
SLOT_CONTEXT = 2048


class LlamaCppModel(LanguageModel):
    """A GGUF model run by llama-cpp-python, with the chat template stored in the GGUF file."""

    backend = "llama-cpp"

    def __init__(self, path: str | Path, *, name: str | None = None, n_ctx: int = 4096,
                 n_threads: int | None = None, device: str | None = None, seed: int = 0,
                 kept_states_mb: float = 1024, slots: int = DEFAULT_SLOTS) -> None:
        self.path = Path(path)
        self.name = name or self.path.stem
        self.n_ctx = n_ctx
        # one thread per free core ($FAIRRAG_THREADS overrides): llama-cpp's threads spin against busy cores
        self.n_threads = n_threads or model_threads()
        self._threads = ThreadChoice(n_threads)  # chosen again while the batching engine works
        # answers decoded at once by the batching engine (1: one after the other on the model's own context)
        self.slots = slots
        self._engine: BatchedDecoder | None = None
        self.requested_device = device
        self.seed = seed
        self._llm = None
        self._formatter = None
        self._lock = ModelLock(self.name)  # first come, first served; the app shows the queue
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
        engine, self._engine = self._engine, None
        if engine is not None:
            engine.close()
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
                              n_threads_batch=self.n_threads,  # prompts too (llama-cpp's default: every core)
                              n_gpu_layers=gpu_layers, seed=self.seed, verbose=False)
        return self._llm

    def _use_threads(self, llm, threads: int) -> None:
        """Let the model's own context use ``threads`` from its next call on (with the lock held)."""
        if threads != self.n_threads:
            import llama_cpp

            llama_cpp.llama_set_n_threads(llm._ctx.ctx, threads, threads)
            self.n_threads = threads

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

    def complete(self, prompts: Sequence[ChatPrompt], decoding: Decoding | None = None) -> list[Completion]:
        if self.slots > 1:
            return [c for _, c in sorted(self.complete_each(prompts, decoding), key=lambda pair: pair[0])]
        return self._complete_in_turn(prompts, decoding)

    def complete_each(self, prompts: Sequence[ChatPrompt], decoding: Decoding | None = None
                      ) -> Iterator[tuple[int, Completion]]:
        """``(index, completion)`` as each answer is ready. With ``slots > 1`` every prompt goes to the batching
        engine at once (:mod:`.batching`: decoded together with each other and with other callers' prompts);
        leaving the loop early cancels the rest."""
        if self.slots <= 1:
            yield from super().complete_each(prompts, decoding)
            return
        decoding = decoding or Decoding()
        engine = self._engine_for()
        # submitted in sorted order: prompts that share their first documents sit side by side, the first of them
        # evaluates the shared part and the others copy it (see BatchedDecoder._place)
        order = self.prefix_order(prompts)
        tokens = {i: self._prompt_tokens(prompts[i]) for i in order}
        for i in order:
            check_context(len(tokens[i]), decoding, self.n_ctx)
        batched = [i for i in order if engine.fits(len(tokens[i]), decoding)]
        for j, completion in engine.each([tokens[i] for i in batched], decoding):
            yield batched[j], completion
        # over a slot's context: on the model's own, in turn
        longer = [i for i in order if not engine.fits(len(tokens[i]), decoding)]
        for i, completion in zip(longer, self._complete_in_turn([prompts[i] for i in longer], decoding)):
            yield i, completion

    def _prompt_tokens(self, prompt: ChatPrompt) -> list[int]:
        # tokenising only reads the vocabulary: outside the lock, so a caller does not queue behind an engine step
        if self._llm is None:
            with self._lock:
                self._load()
        return self._llm.tokenize(self._render(prompt).encode("utf-8"), add_bos=True, special=True)

    def _engine_for(self) -> BatchedDecoder:
        with self._lock:
            llm = self._load()
            if self._engine is None:
                self._engine = BatchedDecoder(llm, name=self.name, lock=self._lock, threads=self._threads,
                                              usage=self.usage,
                                              slots=self.slots, n_ctx=min(self.n_ctx, SLOT_CONTEXT),
                                              gpu=self.device == "cuda")
            return self._engine

    def _complete_in_turn(self, prompts: Sequence[ChatPrompt], decoding: Decoding | None) -> list[Completion]:
        """One prompt after the other on the model's own context, behind its lock (``slots = 1``)."""
        decoding = decoding or Decoding()
        threads = self._threads.current()
        with self._lock:
            llm = self._load()
            self._use_threads(llm, threads)
            # Prompt processing dominates on CPU (≈ 220 tokens/s for SmolLM2 on 2 cores), and llama-cpp reuses the
            # KV cache of the longest common prefix with the previous prompt: visit prompts in sorted order so
            # that lists sharing their first documents run back to back.
            out = [Completion("")] * len(prompts)
            for i in self.prefix_order(prompts):
                previous = llm.input_ids[: llm.n_tokens].tolist()
                reply = llm.create_chat_completion(messages=prompts[i].messages(), temperature=0.0, top_k=1,
                                                   max_tokens=decoding.max_new_tokens, seed=self.seed,
                                                   stop=list(decoding.stop), repeat_penalty=decoding.repeat_penalty)
                choice = reply["choices"][0]
                out[i] = Completion((choice["message"]["content"] or "").strip(), choice.get("finish_reason") or "stop",
                                    reply["usage"]["completion_tokens"])
                # llama-cpp's own prompt (it may add a BOS): the prefix it reused is the common one with the last
                prompt_ids = llm.input_ids[: reply["usage"]["prompt_tokens"]].tolist()
                reused = common_prefix(previous, prompt_ids)
                self.usage.add(len(prompt_ids) - reused, reused, reply["usage"]["completion_tokens"])
            return out

    prefix_order = staticmethod(prefix_order)

    def option_probabilities(self, prompt: ChatPrompt, options: Sequence[str], *, keep_prefix: str = "") -> np.ndarray:
        threads = self._threads.current()  # measured outside the lock (it samples the machine for 0.2 s)
        with self._lock:
            llm = self._load()
            self._use_threads(llm, threads)
            text = self._render(prompt)
            tokens = llm.tokenize(text.encode("utf-8"), add_bos=False, special=True)
            if len(tokens) >= self.n_ctx:
                raise InvalidParameterError(f"prompt has {len(tokens)} tokens, over the context of {self.n_ctx}")
            firsts = [llm.tokenize(o.encode("utf-8"), add_bos=False, special=False)[0] for o in options]
            check_options(firsts, options)
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
