#!/usr/bin/env bash
# `make test` step: inventories/sample is a complete, valid inventory. Syntax of site.yml against
# it, then the validation plays on the controller alone (--skip-tags validate_nodes: inventory
# shape, ansible-core version, every role's settings against its argument spec and cross-checks;
# nothing contacts the sample's nodes, which do not exist).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
export PATH=$repo/.venv/bin:$PATH ANSIBLE_CONFIG=$repo/ansible.cfg
ansible-inventory -i inventories/sample --graph
ansible-playbook --syntax-check -i inventories/sample site.yml
ansible-playbook -i inventories/sample playbooks/validate.yml --skip-tags validate_nodes
# The IP plan and rank table preview, from the inventory alone (no node contacted).
ansible-playbook -i inventories/sample playbooks/plan.yml
