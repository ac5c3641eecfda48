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

test: install
	$(BIN)/python -m pytest -q -m "not slow" tests

test-slow: install
	$(BIN)/python -m pytest -q -m slow tests

test-all: install
	$(BIN)/python -m pytest -q tests

clean:
	rm -rf $(DEMO_DIR) build *.egg-info
