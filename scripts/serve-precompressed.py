"""Serve a folder on 127.0.0.1 over HTTP, sending precompressed files.

What `make playground` runs (scripts/playground.sh serve): Python's
http.server, except that a file with a `.br` or `.gz` sibling at least as
new as itself (scripts/precompress.mjs writes them for web/pkg/) is sent as
that sibling with `Content-Encoding: br` or `gzip`, when the request's
Accept-Encoding allows it (Brotli first), with the original file's
Content-Type and `Vary: Accept-Encoding`. Every other request is answered
as `python3 -m http.server` answers it.

Usage: python3 scripts/serve-precompressed.py PORT FOLDER
"""

import functools
import http.server
import os
import sys

# Brotli first: it is the smaller of the two.
ENCODINGS = (("br", ".br"), ("gzip", ".gz"))


def accepted(header):
    """The content codings an Accept-Encoding header allows (q=0 refuses)."""
    codings = set()
    for item in (header or "").split(","):
        name, *params = [part.strip() for part in item.split(";")]
        quality = 1.0
        for param in params:
            key, _, value = param.partition("=")
            if key.strip().lower() == "q":
                try:
                    quality = float(value)
                except ValueError:
                    pass
        if name and quality > 0:
            codings.add(name.lower())
    return codings


class Handler(http.server.SimpleHTTPRequestHandler):
    """http.server's handler, with precompressed siblings of files."""

    extensions_map = {
        **http.server.SimpleHTTPRequestHandler.extensions_map,
        ".wasm": "application/wasm",
        ".js": "text/javascript",
        ".mjs": "text/javascript",
    }

    def send_head(self):
        path = self.translate_path(self.path)
        if os.path.isfile(path):
            allowed = accepted(self.headers.get("Accept-Encoding"))
            for coding, suffix in ENCODINGS:
                sibling = path + suffix
                if coding in allowed and os.path.isfile(sibling):
                    if os.path.getmtime(sibling) >= os.path.getmtime(path):
                        return self.send_encoded(path, sibling, coding)
        return super().send_head()

    def send_encoded(self, path, sibling, coding):
        """Headers for `sibling` sent as `path` in `coding`; returns the file."""
        f = open(sibling, "rb")
        try:
            size = os.fstat(f.fileno()).st_size
            self.send_response(200)
            self.send_header("Content-Type", self.guess_type(path))
            self.send_header("Content-Encoding", coding)
            self.send_header("Content-Length", str(size))
            self.send_header("Vary", "Accept-Encoding")
            self.send_header("Last-Modified", self.date_time_string(os.path.getmtime(path)))
            self.end_headers()
            return f
        except BaseException:
            f.close()
            raise


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: serve-precompressed.py PORT FOLDER")
    port, folder = int(sys.argv[1]), sys.argv[2]
    handler = functools.partial(Handler, directory=folder)
    with http.server.ThreadingHTTPServer(("127.0.0.1", port), handler) as server:
        try:
            server.serve_forever()
        except KeyboardInterrupt:
            pass


if __name__ == "__main__":
    main()
