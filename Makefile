# The two set-up commands of the README: `make demo` and `make test`.
.PHONY: install demo test bench clean

install: .venv/.installed

.venv/.installed: pyproject.toml requirements.lock scripts/install.sh scripts/debian-packages.txt scripts/spacy-model.txt
	bash scripts/install.sh
	touch $@

demo: install
	.venv/bin/segbench demo

test: install
	bash scripts/test.sh

bench: install
	.venv/bin/python bench/coco_cd_scale.py
	.venv/bin/python bench/noun_mining.py
	.venv/bin/python bench/cafe_eval.py

clean:
	rm -rf .venv .segbench
