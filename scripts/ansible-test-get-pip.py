"""Offline stand-in for the get-pip.py that `ansible-test --venv` downloads to bootstrap pip.

That download comes from a host our machines and CI cannot reach. ansible-test runs this file with
pip install options and the packages it wants (`pip==X`, ...), exactly as it would run get-pip.py.
We install pip from the interpreter's bundled ensurepip wheel, then let that pip install the
requested packages from the configured package index.
"""

import ensurepip
import subprocess
import sys

ensurepip.bootstrap(upgrade=True)
sys.exit(subprocess.call([sys.executable, "-m", "pip", "install", *sys.argv[1:]]))
