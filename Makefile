# t2t_lite: `make demo` and `make test` work on a fresh clone with Python 3.11.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
DEMO_DIR ?= demo_out

.PHONY: install demo test test-slow test-all clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

# Reinstalls when setup.py changes.
$(VENV)/.installed: setup.py | $(BIN)/python
	$(BIN)/python -m pip install -q -e ".[test]"
	touch $@

install: $(VENV)/.installed

# Trains the tiny Transformer on algorithmic_reverse, then decodes the 1,000
# held-out test sequences and prints the exact-sequence accuracy.
demo: install
	rm -rf $(DEMO_DIR)
	$(BIN)/t2t_lite-trainer --problem=algorithmic_reverse --hparams=tiny \
	    --hparams_overrides=dropout_rate=0.0,learning_rate_scale=0.5 --train_steps=1400 \
	    --save_checkpoints_steps=500 --output_dir=$(DEMO_DIR)
	$(BIN)/t2t_lite-decoder --output_dir=$(DEMO_DIR) --beam_size=1 --batch_size=250

test: install
	$(BIN)/python -m pytest -q -m "not slow" tests

test-slow: install
	$(BIN)/python -m pytest -q -m slow tests

test-all: install
	$(BIN)/python -m pytest -q tests

clean:
	rm -rf $(DEMO_DIR) build *.egg-info
