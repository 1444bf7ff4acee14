# The set-up commands of the README: `make demo` and `make test` (`make test-fast`: the unit tests only).
.PHONY: install demo test test-fast bench bench-quick clean

install: .venv/.installed

.venv/.installed: pyproject.toml requirements.lock scripts/install.sh scripts/debian-packages.txt scripts/spacy-model.txt
	bash scripts/install.sh
	touch $@

demo: install
	.venv/bin/segbench demo

test: install
	bash scripts/test.sh

# The inner loop: ruff, mypy and the unit tests in a random order, no server started (a few minutes).
test-fast: install
	.venv/bin/ruff check src tests bench
	.venv/bin/mypy
	.venv/bin/python -m pytest -m unit -p randomly -n 2 -q

bench: install
	.venv/bin/python bench/run.py

bench-quick: install
	.venv/bin/python bench/run.py --quick

clean:
	rm -rf .venv .segbench
