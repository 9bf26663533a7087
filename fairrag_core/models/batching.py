"""Continuous batching for a llama.cpp model: the answers of every session and job decode together.

(Long because the engine is one state machine — queue, slots, prefix copies, the worker's steps — whose parts share
one condition and one context; split, each part would reach into the others' state.)

A llama.cpp context can hold several sequences (``n_seq_max``) and evaluate tokens of all of them in one
``llama_decode`` call. On a CPU a generated token costs about as much for 8 sequences at once as for 1 (the weights
are read from memory once per step), so answers that are decoded together finish sooner in all than answers that
take turns behind a lock (issue 31: a room of students pressing Generate). Prompt evaluation does not gain — it is
bound by arithmetic, not memory — so the engine avoids it where it can instead: a new prompt starts from the longest
prefix any slot already holds in the KV cache (its own previous prompt, or another slot's through
``llama_memory_seq_cp``: a copy of the cells, far cheaper than evaluating them again).

:class:`BatchedDecoder` owns one context and one worker thread. :meth:`~BatchedDecoder.submit` queues a prompt (as
tokens) and returns a :class:`Ticket`; the worker admits queued prompts into free slots — fairly, the owner with the
fewest prompts in slots first, so one job's 20 lists do not hold the room back — and runs steps: one token for each
slot that is generating, plus a chunk of the prompts being evaluated (a small chunk while others generate, so their
tokens keep coming). Decoding is greedy with llama.cpp's repetition penalty over the last 64 generated tokens; an answer
ends at an end-of-generation token, at the first stop string (cut there) or at ``max_new_tokens``.

Each step takes the model's :class:`~fairrag_core.models.queue.ModelLock`, so calls that use the model's other
context (the judge's option probabilities) run between two steps, and the threads are chosen again while the engine
works (:class:`~fairrag_core.models.threads.ThreadChoice`). The engine's queue is shown like a lock's
(:meth:`~BatchedDecoder.state`): "qwen2.5-0.5b: 5 answers at once for Generate (news), Generate (people); 12 waiting".

Answers are those of the one-at-a-time path as long as each prompt is decoded alone; decoded together, llama.cpp's
CPU kernels treat a token differently depending on how many tokens share its batch (rows go through a 4-row
kernel or a one-row remainder), so a logit moves by up to ~0.5 (of ~30; measured on Qwen2.5-0.5B, with separate KV
streams per slot too), and a small model's greedy answer can change where two tokens nearly tie. The one-at-a-time
path had the same property across prompt-cache states. A stored run's answers stay as they were in the answer
cache, which is what reproduces it.
"""

from __future__ import annotations

import ctypes
import threading
import time
from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

from ..errors import InvalidParameterError
from .llm import Completion, Decoding, TokenUsage, check_context, common_prefix
from .queue import ModelLock, QueueState, current_activity, register_queue
from .threads import ThreadChoice

__all__ = ["BatchedDecoder", "Ticket", "penalise", "admission_order"]

#: Prompt tokens read in a step that also generates: the generated tokens ride along with a chunk of reading (a step
#: costs one pass over the weights plus its tokens). Measured on make class (Qwen2.5-1.5B, 20 lists, idle 2 cores):
#: 128-token chunks with every slot reading took 158 s for what took 168 s one at a time; 16-token chunks starved the
#: reading (207 s), and reading at most two prompts at a time gave 168 s with the first answer no sooner (51 s: a
#: long first answer waits for a chunk at each of its tokens).
CHUNK_WHILE_GENERATING = 128
#: A prompt waits for another slot's evaluation only when that shares at least this many more tokens.
FOLLOW_MIN_TOKENS = 16
#: Tokens llama.cpp's repetition penalty looks back over (llama-cpp-python's ``last_n_tokens_size``). As there, only
#: generated tokens count: llama-cpp-python's sampler is made afresh for each answer and sees only what it chose.
PENALTY_WINDOW = 64


def penalise(logits: np.ndarray, context: Sequence[int], penalty: float) -> np.ndarray:
    """llama.cpp's repetition penalty: each distinct token of ``context`` has its logit divided by ``penalty`` when
    positive, multiplied when negative (1.0: unchanged).

    >>> penalise(np.array([2.0, -2.0, 1.0]), [0, 1, 0], 2.0).tolist()
    [1.0, -4.0, 1.0]
    """
    if penalty == 1.0 or not len(context):
        return logits
    out = logits.copy()
    seen = np.unique(np.asarray(context, dtype=np.int64))
    values = out[seen]
    out[seen] = np.where(values > 0, values / penalty, values * penalty)
    return out


def admission_order(queued: Sequence[str], in_slots: dict[str, int]) -> list[int]:
    """Indices of ``queued`` (each entry its owner) in the order they get free slots: the owner with the fewest
    prompts in slots first, then arrival; a prompt admitted counts for its owner.

    >>> admission_order(["a", "a", "a", "b", "c"], {"a": 1})
    [3, 4, 0, 1, 2]
    """
    counts = dict(in_slots)
    remaining = list(range(len(queued)))
    order = []
    while remaining:
        best = min(remaining, key=lambda i: (counts.get(queued[i], 0), i))
        order.append(best)
        remaining.remove(best)
        counts[queued[best]] = counts.get(queued[best], 0) + 1
    return order


@dataclass(eq=False)
class Ticket:
    """One submitted prompt: wait for its :class:`Completion` with :meth:`result`, or :meth:`cancel` it."""

    tokens: list[int]
    decoding: Decoding
    owner: str
    label: str
    thread: str
    done: threading.Event = field(default_factory=threading.Event)
    completion: Completion | None = None
    error: BaseException | None = None
    cancelled: bool = False
    reused: int = 0  # prompt tokens served from the cache
    generated: list[int] = field(default_factory=list)
    text: bytearray = field(default_factory=bytearray)

    def result(self, timeout: float | None = None) -> Completion:
        if not self.done.wait(timeout):
            raise TimeoutError("the answer is not ready")
        if self.error is not None:
            raise self.error
        assert self.completion is not None
        return self.completion

    def cancel(self) -> None:
        """Drop the prompt: taken out of the queue, or out of its slot at the next step."""
        self.cancelled = True


@dataclass
class _Slot:
    seq: int
    tokens: list[int] = field(default_factory=list)  # tokens whose KV the cache holds for this sequence
    ticket: Ticket | None = None
    pending: list[int] = field(default_factory=list)  # prompt tokens still to evaluate
    next_token: int | None = None  # generated, not yet evaluated
    used: float = 0.0
    # (slot, its ticket, n): wait until that slot has evaluated the first n tokens of this prompt, then copy them
    follow: tuple[_Slot, Ticket, int] | None = None


class BatchedDecoder:
    """Greedy decoding of many prompts at once on one llama.cpp model (module docstring).

    ``llm``: the model's ``llama_cpp.Llama`` (its weights and tokenizer are shared; the engine makes its own
    context). ``slots``: sequences decoded at once; ``n_ctx``: KV cells of each slot (a prompt and its answer must
    fit: :meth:`fits`). Each slot has a stream of cells of its own, so a token attends over its own prompt only;
    in one pool shared by all slots every token's attention ran over every slot's cells, and one caller's
    answers took 1.2× as long as on the one-at-a-time path.
    """

    def __init__(self, llm, *, name: str, lock: ModelLock, threads: ThreadChoice, slots: int = 8,
                 n_ctx: int = 2048, n_batch: int = 512, gpu: bool = False, usage: TokenUsage | None = None) -> None:
        import llama_cpp as L

        self._L = L
        self.name = name
        self.slots_n = slots
        self.n_ctx = n_ctx
        self.n_batch = n_batch
        self._lock = lock
        self._threads = threads
        self._llm = llm
        self.usage = usage if usage is not None else TokenUsage()
        params = L.llama_context_default_params()
        params.n_ctx = n_ctx * slots
        params.n_batch = n_batch
        params.n_ubatch = n_batch
        params.n_seq_max = slots
        params.kv_unified = False  # a stream of n_ctx cells per slot (see the class docstring)
        params.n_threads = params.n_threads_batch = self._n_threads = threads.current()
        params.offload_kqv = gpu
        # as llama-cpp-python's Llama (the one-at-a-time path): no flash attention, so both paths sum alike
        params.flash_attn_type = L.LLAMA_FLASH_ATTN_TYPE_DISABLED
        self._ctx = L.llama_init_from_model(llm._model.model, params)
        if not self._ctx:
            raise RuntimeError(f"llama.cpp could not make a {slots}-sequence context for {name}")
        self._mem = L.llama_get_memory(self._ctx)
        self._vocab = llm._model.vocab
        self._n_vocab = L.llama_vocab_n_tokens(self._vocab)
        self._batch = L.llama_batch_init(n_batch, 0, 1)
        self._slots = [_Slot(seq) for seq in range(slots)]
        self._queue: deque[Ticket] = deque()
        self._cond = threading.Condition()
        self._closed = False
        self.steps = 0
        self.batched_tokens = 0  # generated tokens that shared their step with another sequence's
        self.reused_tokens = 0
        self.prompt_tokens = 0
        self._worker = threading.Thread(target=self._run, name=f"fairrag-batch-{name}", daemon=True)
        self._worker.start()
        register_queue(self)

    # ---- callers -----------------------------------------------------------------------------------------------

    def fits(self, n_tokens: int, decoding: Decoding) -> bool:
        """Whether a prompt of ``n_tokens`` and its answer fit in a slot."""
        return n_tokens + decoding.max_new_tokens <= self.n_ctx

    def submit(self, tokens: Sequence[int], decoding: Decoding, *, owner: str | None = None) -> Ticket:
        """Queue a prompt's tokens; the ticket's :meth:`Ticket.result` is its completion."""
        tokens = list(tokens)
        if not tokens:
            raise InvalidParameterError("the prompt has no tokens")
        check_context(len(tokens), decoding, self.n_ctx)
        thread = threading.current_thread().name
        ticket = Ticket(tokens, decoding, owner or thread, current_activity(), thread)
        with self._cond:
            if self._closed:
                raise RuntimeError(f"the model {self.name} was closed")
            self._queue.append(ticket)
            self._cond.notify_all()
        return ticket

    def each(self, prompts: Sequence[Sequence[int]], decoding: Decoding) -> Iterable[tuple[int, Completion]]:
        """``(index, completion)`` as each prompt's answer is ready. Leaving the loop early (or an exception while
        waiting) cancels the prompts that have not finished."""
        left = {i: self.submit(p, decoding) for i, p in enumerate(prompts)}
        try:
            while left:
                for i in self.wait(left):
                    yield i, left.pop(i).result()
        finally:
            for ticket in left.values():
                ticket.cancel()
            with self._cond:
                self._cond.notify_all()

    def wait(self, index: dict[int, Ticket]) -> list[int]:
        """Block until at least one ticket of ``index`` is done; return the indices (its keys) that are.

        While some of them still queue for a slot, the thread's :func:`~fairrag_core.models.queue.on_wait`
        callback is told the queue and the first place about every second (and ``None`` once all are in slots)."""
        from .queue import WAIT_REPORT_SECONDS, wait_reporter

        report = wait_reporter()
        reported = False
        while True:
            ready = [i for i, t in index.items() if t.done.is_set()]
            if ready:
                if reported and report is not None:
                    report(None, 0)
                return ready
            if report is not None:
                places = self._places(index.values())
                if places:
                    report(self.state(), min(places))
                    reported = True
                elif reported:
                    report(None, 0)
                    reported = False
            with self._cond:
                self._cond.wait(timeout=WAIT_REPORT_SECONDS)

    def _places(self, tickets: Iterable[Ticket]) -> list[int]:
        with self._cond:
            waiting = [t for t in self._queue if not t.cancelled]
        mine = {id(t) for t in tickets}
        return [place for place, t in enumerate(waiting, 1) if id(t) in mine]

    def state(self) -> QueueState:
        """The engine as a queue: the activities being answered now, then the prompts waiting for a slot."""
        with self._cond:
            active = [s.ticket for s in self._slots if s.ticket is not None]
            waiting = tuple((t.thread, t.label) for t in self._queue if not t.cancelled)
            answering = tuple((t.thread, t.label) for t in active)
        holder = None
        if active:
            labels = list(dict.fromkeys(t.label for t in active))
            holder = f"{len(active)} answer{'s' if len(active) != 1 else ''} at once for {', '.join(labels)}"
        return QueueState(self.name, holder, self._worker.name if active else None, waiting, self.slots_n, answering)

    def close(self) -> None:
        with self._cond:
            self._closed = True
            for ticket in self._queue:
                ticket.error = RuntimeError(f"the model {self.name} was closed")
                ticket.done.set()
            self._queue.clear()
            self._cond.notify_all()
        self._worker.join()
        L = self._L
        if self._ctx:
            L.llama_batch_free(self._batch)
            L.llama_free(self._ctx)
            self._ctx = None

    # ---- the worker --------------------------------------------------------------------------------------------

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._closed and not self._queue and all(s.ticket is None for s in self._slots):
                    self._cond.wait()
                if self._closed:
                    for slot in self._slots:
                        if slot.ticket is not None:
                            self._finish(slot, error=RuntimeError(f"the model {self.name} was closed"))
                    return
                self._drop_cancelled()
                self._admit()
            try:
                self._step()
            except BaseException as err:
                with self._cond:
                    for slot in self._slots:
                        if slot.ticket is not None:
                            self._finish(slot, error=err)
                        self._forget(slot)
                    self._cond.notify_all()

    def _drop_cancelled(self) -> None:  # with self._cond held
        for ticket in [t for t in self._queue if t.cancelled]:
            self._queue.remove(ticket)
            ticket.error = RuntimeError("cancelled")
            ticket.done.set()
        for slot in self._slots:
            if slot.ticket is not None and slot.ticket.cancelled:
                self._finish(slot, error=RuntimeError("cancelled"))

    def _admit(self) -> None:  # with self._cond held
        free = [s for s in self._slots if s.ticket is None]
        if not free or not self._queue:
            return
        owners: dict[str, int] = {}
        for slot in self._slots:
            if slot.ticket is not None:
                owners[slot.ticket.owner] = owners.get(slot.ticket.owner, 0) + 1
        queued = list(self._queue)
        for i in admission_order([t.owner for t in queued], owners):
            if not free:
                break
            ticket = queued[i]
            self._queue.remove(ticket)
            slot = self._place(ticket, free)
            free.remove(slot)

    def _place(self, ticket: Ticket, free: list[_Slot]) -> _Slot:  # with self._cond held
        """Put ``ticket`` in the free slot that keeps most of its prompt in the cache: its own longest common prefix,
        or another slot's copied over."""
        L, tokens = self._L, ticket.tokens
        own = {s.seq: common_prefix(s.tokens, tokens) for s in free}
        target = max(free, key=lambda s: (own[s.seq], -s.used))
        if own[target.seq] == 0:  # nothing in common: the least recently used free slot
            target = min(free, key=lambda s: s.used)
        kept = own[target.seq]
        source, shared = None, kept
        for slot in self._slots:
            if slot is not target:
                n = common_prefix(slot.tokens, tokens)
                if n > shared:
                    source, shared = slot, n
        if source is not None:
            self._copy_prefix(source, target, shared)
            target.tokens = tokens[:shared]
        else:
            L.llama_memory_seq_rm(self._mem, target.seq, kept, -1)
            target.tokens = target.tokens[:kept]
        # a prompt being evaluated in another slot that shares more: wait for it rather than evaluate the same twice
        # (prompts admitted together, e.g. one job's lists that start with the same documents)
        leader, ahead = None, len(target.tokens) + FOLLOW_MIN_TOKENS
        for slot in self._slots:
            # a leader may itself follow another: it evaluates its prompt in the end (leaders are placed earlier)
            if slot is not target and slot.ticket is not None and len(slot.tokens) < len(slot.ticket.tokens):
                n = common_prefix(slot.ticket.tokens, tokens)
                if n > ahead:
                    leader, ahead = slot, n
        target.follow = (leader, leader.ticket, ahead) if leader is not None else None
        target.ticket, target.pending, target.next_token = ticket, tokens[len(target.tokens):], None
        target.used = time.monotonic()
        self._count_reuse(target)
        return target

    def _copy_prefix(self, source: _Slot, target: _Slot, n: int) -> None:
        """Give ``target`` the KV cache of ``source``'s first ``n`` tokens: llama.cpp copies whole streams only, so
        the whole sequence, then what follows the prefix dropped."""
        L = self._L
        L.llama_memory_seq_rm(self._mem, target.seq, -1, -1)
        L.llama_memory_seq_cp(self._mem, source.seq, target.seq, -1, -1)
        L.llama_memory_seq_rm(self._mem, target.seq, n, -1)

    def _count_reuse(self, slot: _Slot) -> None:
        if slot.follow is None:
            ticket = slot.ticket
            ticket.reused = len(slot.tokens)
            self.reused_tokens += ticket.reused
            self.prompt_tokens += len(ticket.tokens) - ticket.reused

    def _catch_up(self) -> None:  # with self._cond held
        """Followers whose leader has evaluated the shared prefix copy it now (or give up waiting when it is gone)."""
        for slot in self._slots:
            if slot.follow is None or slot.ticket is None:
                continue
            leader, led, n = slot.follow
            tokens = slot.ticket.tokens
            if leader.ticket is led and len(leader.tokens) >= n:
                self._copy_prefix(leader, slot, n)
                slot.tokens, slot.pending, slot.follow = tokens[:n], tokens[n:], None
            elif leader.ticket is not led:
                slot.follow = None  # the leader finished, was cancelled or was replaced: evaluate it here
                slot.pending = tokens[len(slot.tokens):]
            else:
                continue
            self._count_reuse(slot)

    def _finish(self, slot: _Slot, *, reason: str = "stop", error: BaseException | None = None) -> None:
        ticket = slot.ticket
        if ticket is None:
            return
        if error is not None:
            ticket.error = error
        else:
            text = ticket.text.decode("utf-8", "ignore")
            for stop in ticket.decoding.stop:
                cut = text.find(stop)
                if cut >= 0:
                    text, reason = text[:cut], "stop"
            ticket.completion = Completion(text.strip(), reason, len(ticket.generated))
            self.usage.add(len(ticket.tokens) - ticket.reused, ticket.reused, len(ticket.generated))
        slot.ticket, slot.pending, slot.next_token, slot.follow = None, [], None, None
        slot.used = time.monotonic()
        ticket.done.set()

    def _forget(self, slot: _Slot) -> None:
        self._L.llama_memory_seq_rm(self._mem, slot.seq, -1, -1)
        slot.tokens = []

    def _step(self) -> None:
        """One ``llama_decode``: a token for each generating slot, then prompt chunks."""
        taken: dict[int, int] = {}  # prompt tokens evaluated per slot
        with self._cond:
            generating = [s for s in self._slots if s.ticket is not None and s.next_token is not None]
            self._catch_up()
            evaluating = [s for s in self._slots if s.ticket is not None and s.pending and s.follow is None]
        # (slot, token, wants logits)
        entries: list[tuple[_Slot, int, bool]] = [(slot, slot.next_token, True) for slot in generating]
        budget = self.n_batch - len(entries)
        if generating:  # a chunk of reading in every step, so the answers' tokens cost little more than a pass
            budget = min(budget, CHUNK_WHILE_GENERATING)
        for slot in sorted(evaluating, key=lambda s: s.used):
            if budget <= 0:
                break
            chunk = slot.pending[:budget]
            last = len(chunk) == len(slot.pending)
            entries.extend((slot, token, last and k == len(chunk) - 1) for k, token in enumerate(chunk))
            taken[slot.seq] = len(chunk)
            budget -= len(chunk)
        if not entries:
            return
        self._decode(entries)
        with self._cond:
            for slot, token, _ in entries:
                slot.tokens.append(token)
            for slot in generating:
                slot.next_token = None
            for slot in evaluating:
                slot.pending = slot.pending[taken.get(slot.seq, 0):]
            self._choose(entries, generating=sum(1 for *_, logits in entries if logits))
            self._catch_up()
            self._cond.notify_all()

    def _decode(self, entries: list[tuple[_Slot, int, bool]]) -> None:
        L, batch = self._L, self._batch
        positions: dict[int, int] = {}
        batch.n_tokens = len(entries)
        for i, (slot, token, logits) in enumerate(entries):
            pos = positions.get(slot.seq, len(slot.tokens))
            positions[slot.seq] = pos + 1
            batch.token[i], batch.pos[i], batch.n_seq_id[i], batch.logits[i] = token, pos, 1, logits
            batch.seq_id[i][0] = slot.seq
        threads = self._threads.current()
        with self._lock:
            if threads != self._n_threads:
                L.llama_set_n_threads(self._ctx, threads, threads)
                self._n_threads = threads
            # every slot has a stream of n_ctx cells and submit() admits only what fits: nothing to evict on failure
            code = L.llama_decode(self._ctx, batch)
            self.steps += 1
        if code != 0:
            raise RuntimeError(f"llama.cpp could not decode a batch of {len(entries)} tokens (code {code})")

    def _choose(self, entries: list[tuple[_Slot, int, bool]], *, generating: int) -> None:  # with self._cond held
        """The next token of every slot whose logits the step computed, and the answers that end with it."""
        L = self._L
        for i, (slot, _, logits) in enumerate(entries):
            ticket = slot.ticket
            if not logits or ticket is None:
                continue
            if ticket.cancelled:
                self._finish(slot, error=RuntimeError("cancelled"))
                continue
            if generating > 1:
                self.batched_tokens += 1
            row = np.ctypeslib.as_array(L.llama_get_logits_ith(self._ctx, i), shape=(self._n_vocab,))
            context = ticket.generated[-PENALTY_WINDOW:]  # not the prompt: as the slots=1 path
            chosen = int(np.argmax(penalise(row, context, ticket.decoding.repeat_penalty)))
            if L.llama_vocab_is_eog(self._vocab, chosen):
                self._finish(slot, reason="stop")
                continue
            ticket.generated.append(chosen)
            ticket.text += self._piece(chosen)
            text = ticket.text.decode("utf-8", "ignore")
            if any(stop in text for stop in ticket.decoding.stop):
                self._finish(slot, reason="stop")
            elif len(ticket.generated) >= ticket.decoding.max_new_tokens:
                self._finish(slot, reason="length")
            else:
                slot.next_token = chosen

    def _piece(self, token: int) -> bytes:
        buffer = ctypes.create_string_buffer(64)
        n = self._L.llama_token_to_piece(self._vocab, token, buffer, 64, 0, False)
        if n < 0:
            buffer = ctypes.create_string_buffer(-n)
            n = self._L.llama_token_to_piece(self._vocab, token, buffer, -n, 0, False)
        return buffer.raw[:n]

