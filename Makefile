# t2t_lite: `make demo` and `make test` work on a fresh clone with Python 3.11.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
DEMO_DIR ?= demo_out

.PHONY: install demo pictures docs test test-slow test-all clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

# Reinstalls when setup.py or pyproject.toml changes.
$(VENV)/.installed: setup.py pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q -e ".[test]"
	touch $@

install: $(VENV)/.installed

# Trains the tiny Transformer on algorithmic_reverse, averages the last 5
# checkpoints (section 6.1), then beam-decodes the 1,000 held-out test
# sequences and prints the exact-sequence accuracy.
DEMO_OVERRIDES := dropout_rate=0.0,learning_rate_scale=0.5,min_length_bucket=14
demo: install
	rm -rf $(DEMO_DIR)
	$(BIN)/t2t_lite-trainer --problem=algorithmic_reverse --hparams=tiny \
	    --hparams_overrides=$(DEMO_OVERRIDES) --train_steps=1400 \
	    --save_checkpoints_steps=50 --keep_checkpoint_max=5 --output_dir=$(DEMO_DIR)
	$(BIN)/t2t_lite-avg-checkpoints --output_dir=$(DEMO_DIR) --last=5
	$(BIN)/t2t_lite-decoder --output_dir=$(DEMO_DIR) --checkpoint=averaged --batch_size=250

# The README's pictures from the demo model (runs `make demo` first if
# $(DEMO_DIR) has no checkpoint): training curves, the attention grid (PNG), the
# attention page (HTML) and a headless-Chromium screenshot of it (Debian: apt-get
# install chromium).
PICTURES ?= docs/images
PICTURE_INPUT ?= 3 1 4 1 5 9 2 6 5 3 5 8
CHROMIUM ?= chromium
pictures: install
	test -e $(DEMO_DIR)/checkpoint || $(MAKE) demo
	mkdir -p $(PICTURES)
	$(BIN)/t2t_lite-plot --output_dir=$(DEMO_DIR) --output_file=$(PICTURES)/curves.png
	$(BIN)/t2t_lite-visualize --output_dir=$(DEMO_DIR) --checkpoint=averaged \
	    --input="$(PICTURE_INPUT)" --output_file=$(PICTURES)/attention.png
	$(BIN)/t2t_lite-visualize --output_dir=$(DEMO_DIR) --checkpoint=averaged \
	    --input="$(PICTURE_INPUT)" --output_file=$(PICTURES)/attention.html
	$(CHROMIUM) --headless --no-sandbox --disable-gpu --hide-scrollbars \
	    --window-size=1000,520 --screenshot=$(PICTURES)/attention_html.png \
	    "file://$(CURDIR)/$(PICTURES)/attention.html?kind=cross&layer=1&head=0&hover=3" 2>/dev/null

# The documentation site: regenerate the reference and results pages, then build site/
# (--strict: a broken link or a missing page is an error). `$(BIN)/mkdocs serve` previews it.
docs: install
	$(BIN)/python -m tools.gen_docs
	$(BIN)/mkdocs build --strict

# Two pytest-xdist workers (one per core), each test file on one worker, so a
# file's module fixtures (a trained tiny model, a datagen) are built once.
WORKERS ?= 2
PYTEST := $(BIN)/python -m pytest -q -rs -n $(WORKERS) --dist loadfile -p no:cacheprovider --durations=20

test: install
	$(PYTEST) -m "not slow" tests

test-slow: install
	$(PYTEST) -m slow tests

# What CI runs (.ci/run): every tier.
test-all: install
	$(PYTEST) tests

clean:
	rm -rf $(DEMO_DIR) build site *.egg-info
