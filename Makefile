# The two set-up commands of the README: `make demo` and `make test`.
.PHONY: install demo test bench bench-quick clean

install: .venv/.installed

.venv/.installed: pyproject.toml requirements.lock scripts/install.sh scripts/debian-packages.txt scripts/spacy-model.txt
	bash scripts/install.sh
	touch $@

demo: install
	.venv/bin/segbench demo

test: install
	bash scripts/test.sh

bench: install
	.venv/bin/python bench/run.py

bench-quick: install
	.venv/bin/python bench/run.py --quick

clean:
	rm -rf .venv .segbench
