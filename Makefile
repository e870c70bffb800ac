# ascendops: the two commands a user needs are `make sim` and `make test` (see README.md).
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
VENV := .venv
export PATH := $(CURDIR)/$(VENV)/bin:$(PATH)
export ANSIBLE_CONFIG := $(CURDIR)/ansible.cfg
NODES ?= 2
NPUS ?= 2
# Who runs the training job on the simulated cluster: systemd (default) or slurm (docs/slurm.md).
SCHEDULER ?= systemd
ifeq ($(filter $(SCHEDULER),systemd slurm),)
$(error SCHEDULER must be systemd or slurm, not '$(SCHEDULER)')
endif
SIM_VARS := $(if $(filter slurm,$(SCHEDULER)),-e @inventories/sim/slurm.yml)

.PHONY: help setup packages sim-image sim-up sim-down sim sim-data sim-status lint sanity unit molecule test build docs clean

help:
	@echo "make sim   - set up, bring up the simulated cluster ($(NODES) nodes x $(NPUS) NPUs), run site.yml, print the training status (SCHEDULER=slurm: under Slurm)"
	@echo "make test  - set up, then lint, ansible-test sanity, pytest and every molecule scenario"
	@echo "other: setup packages sim-image sim-up sim-down lint sanity unit molecule build payload-image clean"

setup:
	scripts/setup.sh

# Simulated vendor packages (SIMULATION ONLY): sim/build/packages/{current,previous}
packages: setup
	sim/packages/build-all.sh

sim-image: setup
	sim/image/build.sh

sim-up: sim-image packages
	sim/cluster.sh up --nodes $(NODES) --npus $(NPUS)

sim-down:
	sim/cluster.sh down

# Synthetic training data for the debug Llama (SIMULATION ONLY), copied to the nodes by the launch role.
sim-data: setup
	HF_HUB_OFFLINE=1 $(VENV)/bin/python sim/data/debug-data.py

# The main job on the simulated cluster: bring it up, run the whole site playbook (ends with the
# debug Llama training on every node), then print the per-node training status.
sim: sim-up sim-data payload-image
	ansible-playbook site.yml -i inventories/sim $(SIM_VARS)
	ansible-playbook playbooks/status.yml -i inventories/sim $(SIM_VARS)

sim-status:
	ansible-playbook playbooks/status.yml -i inventories/sim $(SIM_VARS)

lint: setup
	ruff check .
	yamllint -s .
	ansible-lint --profile production

sanity: setup
	scripts/sanity.sh

unit: setup
	pytest tests
	pytest payload/tests

molecule: sim-image packages
	scripts/molecule-all.sh

test: setup
	scripts/test-all.sh

build: setup
	ansible-galaxy collection build --force --output-path build/

# The generated pages of the user guide (docs/variables.md, docs/troubleshooting.md); make test checks them.
docs: setup
	$(VENV)/bin/python scripts/gen-docs.py

# The trainer's container image (payload/Makefile.inc): make payload-image
include payload/Makefile.inc

clean:
	rm -rf build .cache/ansible-test .pytest_cache .ruff_cache
