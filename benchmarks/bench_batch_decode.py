"""Probe: does this llama-cpp-python decode several sequences in one batch, and what does it buy on this CPU?

    .venv/bin/python benchmarks/bench_batch_decode.py MODEL.gguf [SEQUENCES] [NEW_TOKENS]

Uses the low-level API of llama-cpp-python 0.3.36 (the high-level ``Llama`` only ever decodes sequence 0): one
context with ``n_seq_max = 8``, ``llama_batch`` entries with their own ``seq_id`` and position, greedy argmax of
``llama_get_logits_ith``. It answers ``SEQUENCES`` prompts of ~370 tokens with ``NEW_TOKENS`` tokens each, one after
the other (cache cleared between) and then together (one prefill per sequence, then one batch of all sequences
per generated token), and compares times and tokens.

Measured 2026-11-28 on the shared 2-core machine (load 6-7 from other work, nice 5), Qwen2.5-Coder-0.5B q4_k_m,
5 sequences × 40 tokens: sequential prefill 42.1 s + generation 93.2 s (2.1 tokens/s); batched prefill 34.0 s +
generation 69.1 s (2.8 tokens/s): 1.3× in all, and only 1 of 5 greedy answers had the same tokens as the
sequential run (llama.cpp's kernels sum in another order for a batch of 5 than for 1, so argmax ties break
differently: answers cached by the sequential path would not match). The run was cut at 300 s before its repeat.
"""
import sys
import time

import llama_cpp as L
import numpy as np

path = sys.argv[1]
nseq = int(sys.argv[2]) if len(sys.argv) > 2 else 5
new = int(sys.argv[3]) if len(sys.argv) > 3 else 40
L.llama_backend_init()
mp = L.llama_model_default_params()
model = L.llama_model_load_from_file(path.encode(), mp)
cp = L.llama_context_default_params()
cp.n_ctx = 4096
cp.n_batch = 512
cp.n_ubatch = 512
cp.n_seq_max = 8
cp.n_threads = 2
cp.n_threads_batch = 2
ctx = L.llama_init_from_model(model, cp)
vocab = L.llama_model_get_vocab(model)
n_vocab = L.llama_vocab_n_tokens(vocab)
mem = L.llama_get_memory(ctx)

def tok(text):
    b = text.encode()
    arr = (L.llama_token * 2048)()
    n = L.llama_tokenize(vocab, b, len(b), arr, 2048, True, True)
    return list(arr[:n])

docs = ["Velocore Forge is a stable shoe for flat feet.", "Northmark Glide is light and fast for racing.",
        "Trailsen Ridge grips on wet rock.", "Ambra Cloud cushions long marathon runs.", "Pacer One is cheap."]
prompts = [tok("Documents:\n" + "\n".join(f"[{j+1}] {docs[(i+j) % 5]} " * 6 for j in range(5))
               + f"\nQuestion: which shoe is best for case {i}?\nAnswer:") for i in range(nseq)]
batch = L.llama_batch_init(512, 0, 8)

def put(items):  # items: (token, pos, seq, want_logits)
    batch.n_tokens = len(items)
    for i, (t, p, s, w) in enumerate(items):
        batch.token[i] = t
        batch.pos[i] = p
        batch.n_seq_id[i] = 1
        batch.seq_id[i][0] = s
        batch.logits[i] = w
    assert L.llama_decode(ctx, batch) == 0

def argmax(i):
    return int(np.argmax(np.ctypeslib.as_array(L.llama_get_logits_ith(ctx, i), shape=(n_vocab,))))

def prefill(seq, toks):
    for start in range(0, len(toks), 512):
        chunk = toks[start:start + 512]
        put([(t, start + k, seq, start + k == len(toks) - 1) for k, t in enumerate(chunk)])
    return argmax(batch.n_tokens - 1)

def sequential():
    outs, t_pre, t_gen = [], 0.0, 0.0
    for toks in prompts:
        L.llama_memory_clear(mem, True)
        t0 = time.perf_counter()
        nxt = prefill(0, toks)
        t_pre += time.perf_counter() - t0
        out, pos = [nxt], len(toks)
        t0 = time.perf_counter()
        for _ in range(new - 1):
            put([(out[-1], pos, 0, True)])
            pos += 1
            out.append(argmax(0))
        t_gen += time.perf_counter() - t0
        outs.append(out)
    return outs, t_pre, t_gen

def batched():
    L.llama_memory_clear(mem, True)
    t0 = time.perf_counter()
    outs = [[prefill(s, toks)] for s, toks in enumerate(prompts)]
    t_pre = time.perf_counter() - t0
    pos = [len(t) for t in prompts]
    t0 = time.perf_counter()
    for _ in range(new - 1):
        put([(outs[s][-1], pos[s], s, True) for s in range(len(prompts))])
        for s in range(len(prompts)):
            pos[s] += 1
            outs[s].append(argmax(s))
    return outs, t_pre, time.perf_counter() - t0

print("n_seq_max", L.llama_n_seq_max(ctx), "prompt tokens", [len(p) for p in prompts])
for name, fn in (("sequential", sequential), ("batched", batched), ("sequential", sequential), ("batched", batched)):
    outs, pre, gen = fn()
    print(f"{name:10} prefill {pre:.2f} s, generate {gen:.2f} s ({nseq * (new - 1) / gen:.1f} tokens/s), "
          f"total {pre + gen:.2f} s")
    if name == "sequential":
        ref = outs
    else:
        print("  same greedy tokens as sequential:", sum(a == b for a, b in zip(outs, ref)), "of", nseq)
