"""A package mirror for molecule scenarios: a static HTTP server that logs one line per request.

Serves a directory of vendor packages (sim/build/packages/...) on the address given, and appends
`<method> <path> <status>` lines to a log file so a verifier can count what each node fetched.
"""

import argparse
import functools
import http.server


class LoggingHandler(http.server.SimpleHTTPRequestHandler):
    log_path = None

    def log_request(self, code="-", size="-"):
        with open(self.log_path, "a", encoding="utf-8") as log:
            log.write(f"{self.command} {self.path} {code}\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--bind", required=True)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--directory", required=True)
    parser.add_argument("--log", required=True)
    args = parser.parse_args()
    LoggingHandler.log_path = args.log
    handler = functools.partial(LoggingHandler, directory=args.directory)
    with http.server.ThreadingHTTPServer((args.bind, args.port), handler) as server:
        server.serve_forever()


if __name__ == "__main__":
    main()
