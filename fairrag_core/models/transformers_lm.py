"""Hugging Face transformers backend: any hub id or local folder, causal or seq2seq (Flan-T5 of the paper).

GGUF through ``gguf_file`` (dequantised), length-sorted batches with left padding, fp16 on CUDA, greedy or beam
search. Weights load lazily on first use, never at import; remote code is never run.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..checks import check_positive_int
from ..errors import ModelUnavailableError
from .device import resolve_device
from .hub import hub_load_kwargs
from .llm import ChatPrompt, Completion, Decoding, LanguageModel, check_options, softmax_options
from .queue import ModelLock

__all__ = ["TransformersModel"]


class TransformersModel(LanguageModel):
    """A Hugging Face causal or seq2seq model (any hub id or local folder; ``gguf_file`` for GGUF).

    ``offline``: the models that load without the hub, which the error names when this one cannot load (the
    catalogue's loader passes them: the catalogue imports this module, not the other way round)."""

    backend = "transformers"

    def __init__(self, source: str, *, name: str | None = None, gguf_file: str | None = None,
                 device: str | None = None, batch_size: int = 8, num_beams: int = 1,
                 max_input_tokens: int = 2048, offline: Sequence[str] = ()) -> None:
        batch_size = check_positive_int(batch_size, "batch_size", hint="prompts per forward pass")
        num_beams = check_positive_int(num_beams, "num_beams", hint="1 = greedy decoding")
        self.source = source
        self.name = name or source
        self.gguf_file = gguf_file
        self.requested_device = device
        self.batch_size = batch_size
        self.num_beams = num_beams
        self.max_input_tokens = max_input_tokens
        self.offline = tuple(offline)
        self._model = None
        self._tokenizer = None
        self._lock = ModelLock(self.name)  # first come, first served; the app shows the queue

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

            kwargs = hub_load_kwargs()
            if self.gguf_file:
                kwargs["gguf_file"] = self.gguf_file
            try:
                config = AutoConfig.from_pretrained(self.source, **kwargs)
                tokenizer = AutoTokenizer.from_pretrained(self.source, **kwargs)
            except (OSError, ValueError) as err:
                instead = f"an offline model ({', '.join(self.offline)}) or " if self.offline else ""
                raise ModelUnavailableError(
                    f"cannot load {self.source!r} ({err.__class__.__name__}). Without the Hugging Face hub use "
                    f"{instead}a local folder"
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

    def complete(self, prompts: Sequence[ChatPrompt], decoding: Decoding | None = None) -> list[Completion]:
        import torch

        decoding = decoding or Decoding()
        with self._lock:
            model, tokenizer = self._load()
            texts = self._texts(prompts)
            order = sorted(range(len(texts)), key=lambda i: len(texts[i]))  # similar lengths per batch
            out: list[Completion] = [Completion("")] * len(texts)
            for start in range(0, len(order), self.batch_size):
                idx = order[start : start + self.batch_size]
                batch = tokenizer([texts[i] for i in idx], return_tensors="pt", padding=True, truncation=True,
                                  max_length=self.max_input_tokens, add_special_tokens=model.config.is_encoder_decoder)
                batch = {k: v.to(model.device) for k, v in batch.items()}
                with torch.no_grad():
                    generated = model.generate(**batch, max_new_tokens=decoding.max_new_tokens, do_sample=False,
                                               num_beams=self.num_beams, pad_token_id=tokenizer.pad_token_id,
                                               repetition_penalty=decoding.repeat_penalty)
                if not model.config.is_encoder_decoder:
                    generated = generated[:, batch["input_ids"].shape[1]:]
                for i, seq in zip(idx, generated):
                    text = tokenizer.decode(seq, skip_special_tokens=True)
                    cut = [text.find(s) for s in decoding.stop if s and s in text]
                    ended = bool((seq == tokenizer.eos_token_id).any()) if tokenizer.eos_token_id is not None else False
                    reason = "stop" if cut or ended else ("length" if len(seq) >= decoding.max_new_tokens else "stop")
                    out[i] = Completion((text[: min(cut)] if cut else text).strip(), reason, len(seq))
            return out

    def option_probabilities(self, prompt: ChatPrompt, options: Sequence[str], *, keep_prefix: str = "") -> np.ndarray:
        import torch

        with self._lock:
            model, tokenizer = self._load()
            text = self._texts([prompt])[0]
            enc = tokenizer(text, return_tensors="pt", truncation=True, max_length=self.max_input_tokens,
                            add_special_tokens=model.config.is_encoder_decoder).to(model.device)
            firsts = [tokenizer(o, add_special_tokens=False)["input_ids"][0] for o in options]
            check_options(firsts, options)
            with torch.no_grad():
                if model.config.is_encoder_decoder:
                    start = torch.full((1, 1), model.config.decoder_start_token_id, device=model.device)
                    logits = model(**enc, decoder_input_ids=start).logits[0, -1]
                else:
                    logits = model(**enc).logits[0, -1]
            return softmax_options(logits.float().cpu().numpy()[firsts])
