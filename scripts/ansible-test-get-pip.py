"""Offline stand-in for the get-pip.py that `ansible-test --venv` downloads to bootstrap pip.

That download comes from a host our machines and CI cannot reach. ansible-test runs this file with
pip install options and the packages it wants (`pip==X`, ...), exactly as it would run get-pip.py.
We install pip from the interpreter's bundled ensurepip wheel, then let that pip install the
requested packages from the configured package index.
"""

import ensurepip
import os
import subprocess
import sys

# get-pip.py's own options, which pip install does not know.
GET_PIP_ONLY = {"--no-setuptools", "--no-wheel"}

# ansible-test runs pip with PIP_CONFIG_FILE=/dev/null, so the machine's pip settings (its CA
# bundle among them) are ignored: name the system CA bundle for this first install. The pip it
# installs checks certificates against the system store (truststore) by itself.
CA_BUNDLES = [
    os.environ.get("SSL_CERT_FILE", ""),
    "/etc/ssl/certs/ca-certificates.crt",
    "/etc/pki/tls/certs/ca-bundle.crt",
]

ensurepip.bootstrap(upgrade=True)
args = [a for a in sys.argv[1:] if a not in GET_PIP_ONLY]
cert = next((["--cert", path] for path in CA_BUNDLES if path and os.path.isfile(path)), [])
sys.exit(subprocess.call([sys.executable, "-m", "pip", "install", *cert, *args]))
