"""A headless Chromium driven over the DevTools protocol, for tests of web pages.

`Chromium.start(profile_dir)` runs the browser (Debian's `chromium`, installed by
scripts/ensure-chromium.sh) with the flags that work in containers and CI, reads the
DevTools address from its first lines of stderr, and connects to its one page over a
WebSocket (a socket and wsproto's sans-IO client, already a test dependency through the
server's `websocket` extra). Methods: `open(url)`, `evaluate(js)`, `wait_for(js, timeout)`
(a promise in the page that resolves when the condition holds, checked on every DOM
change: no polling from here), `screenshot(path)`, `close()`.

`find_chromium()` names the binary or returns None; tests skip with the reason then.
"""

from __future__ import annotations

import base64
import collections
import json
import os
import shutil
import socket
import subprocess
import threading
import urllib.request
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from wsproto import ConnectionType, WSConnection
from wsproto.events import (
    AcceptConnection,
    CloseConnection,
    Ping,
    RejectConnection,
    Request,
    TextMessage,
)

FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-dev-shm-usage", "--hide-scrollbars", "--mute-audio",
)
START_TIMEOUT_S = 30.0


def find_chromium() -> str | None:
    """The Chromium binary: $CHROMIUM, else `chromium` or `chromium-browser` on PATH."""
    given = os.environ.get("CHROMIUM")
    if given:
        return given if os.access(given, os.X_OK) else None
    return shutil.which("chromium") or shutil.which("chromium-browser")


class BrowserError(RuntimeError):
    """The browser did not start, or a DevTools command failed."""


class Chromium:
    def __init__(self, proc: subprocess.Popen[bytes], sock: socket.socket, ws: WSConnection,
                 log: collections.deque[str]) -> None:
        self._proc = proc
        self._sock = sock
        self._ws = ws
        self._log = log
        self._next_id = 0
        self._partial = ""

    # -- start and stop -----------------------------------------------------------------
    @classmethod
    def start(cls, profile_dir: Path, *, width: int = 1440, height: int = 900,
              binary: str | None = None) -> Chromium:
        binary = binary or find_chromium()
        if binary is None:
            raise BrowserError("no chromium binary (run scripts/ensure-chromium.sh)")
        proc = subprocess.Popen(
            [binary, *FLAGS, f"--user-data-dir={profile_dir}", "--remote-debugging-port=0",
             f"--window-size={width},{height}", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        )
        log: collections.deque[str] = collections.deque(maxlen=50)
        found: list[str] = []
        ready = threading.Event()

        def drain() -> None:
            assert proc.stderr is not None
            for raw in proc.stderr:
                line = raw.decode(errors="replace").rstrip()
                log.append(line)
                if line.startswith("DevTools listening on ") and not found:
                    found.append(line.split(" on ", 1)[1])
                    ready.set()
            ready.set()  # the browser ended before it listened

        threading.Thread(target=drain, name="chromium-stderr", daemon=True).start()
        if not ready.wait(START_TIMEOUT_S) or not found:
            proc.kill()
            raise BrowserError("chromium did not start: " + " | ".join(log))
        browser = urlsplit(found[0])
        with urllib.request.urlopen(f"http://{browser.netloc}/json/list", timeout=10) as r:
            targets = json.loads(r.read())
        page = next(t for t in targets if t.get("type") == "page")
        target = urlsplit(page["webSocketDebuggerUrl"])
        sock = socket.create_connection((target.hostname, target.port), timeout=60)
        ws = WSConnection(ConnectionType.CLIENT)
        sock.sendall(ws.send(Request(host=target.netloc, target=target.path)))
        chromium = cls(proc, sock, ws, log)
        chromium._handshake()
        chromium.call("Page.enable")
        chromium.call("Emulation.setDeviceMetricsOverride",
                      width=width, height=height, deviceScaleFactor=1, mobile=False)
        return chromium

    def close(self) -> None:
        try:
            self._sock.sendall(self._ws.send(CloseConnection(code=1000)))
        except (OSError, Exception):  # the browser may be gone already
            pass
        self._sock.close()
        self._proc.terminate()
        try:
            self._proc.wait(10)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait(10)

    def __enter__(self) -> Chromium:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- DevTools ---------------------------------------------------------------------------
    def call(self, method: str, timeout: float = 60.0, **params: Any) -> dict[str, Any]:
        """One DevTools command; its result (events in between are skipped)."""
        self._next_id += 1
        ident = self._next_id
        self._sock.sendall(self._ws.send(TextMessage(data=json.dumps(
            {"id": ident, "method": method, "params": params}))))
        self._sock.settimeout(timeout)
        while True:
            for message in self._messages():
                if message.get("id") == ident:
                    if "error" in message:
                        raise BrowserError(f"{method}: {message['error']}")
                    return dict(message.get("result") or {})

    def open(self, url: str) -> None:
        answer = self.call("Page.navigate", url=url)
        if answer.get("errorText"):
            raise BrowserError(f"could not open {url}: {answer['errorText']}")

    def evaluate(self, expression: str, *, timeout: float = 60.0) -> Any:
        """The value of `expression` in the page (a promise is awaited)."""
        result = self.call("Runtime.evaluate", timeout=timeout + 5, expression=expression,
                           awaitPromise=True, returnByValue=True)
        if "exceptionDetails" in result:
            details = result["exceptionDetails"]
            text = details.get("exception", {}).get("description") or details.get("text")
            raise BrowserError(f"{text}")
        return result.get("result", {}).get("value")

    def wait_for(self, condition: str, timeout: float, what: str = "") -> Any:
        """Wait until the JavaScript expression `condition` is truthy in the page (checked
        now and after every DOM change); its value. BrowserError names `what` on timeout."""
        label = json.dumps(what or condition)
        script = f"""new Promise((resolve, reject) => {{
            let observer = null, timer = null;
            const check = () => {{
                let value;
                try {{ value = ({condition}); }} catch (e) {{ value = undefined; }}
                if (value) {{
                    if (observer) observer.disconnect();
                    if (timer) clearTimeout(timer);
                    resolve(value);
                    return true;
                }}
                return false;
            }};
            if (check()) return;
            observer = new MutationObserver(check);
            observer.observe(document, {{subtree: true, childList: true, attributes: true,
                                         characterData: true}});
            timer = setTimeout(() => {{
                observer.disconnect();
                reject(new Error("timed out after {timeout}s waiting for " + {label}));
            }}, {int(timeout * 1000)});
        }})"""
        return self.evaluate(script, timeout=timeout)

    def screenshot(self, path: Path, *, full_page: bool = True) -> Path:
        params: dict[str, Any] = {"format": "png"}
        if full_page:
            metrics = self.call("Page.getLayoutMetrics")
            size = metrics.get("cssContentSize") or metrics.get("contentSize")
            params.update(captureBeyondViewport=True, clip={
                "x": 0, "y": 0, "width": size["width"], "height": size["height"], "scale": 1})
        data = self.call("Page.captureScreenshot", **params)["data"]
        path.write_bytes(base64.b64decode(data))
        return path

    # -- the WebSocket ----------------------------------------------------------------------
    def _handshake(self) -> None:
        while True:
            data = self._sock.recv(65536)
            if not data:
                raise BrowserError("DevTools closed the connection during the handshake")
            self._ws.receive_data(data)
            for event in self._ws.events():
                if isinstance(event, AcceptConnection):
                    return
                if isinstance(event, RejectConnection):
                    raise BrowserError(f"DevTools refused the WebSocket: {event.status_code}")

    def _messages(self) -> list[dict[str, Any]]:
        data = self._sock.recv(1 << 20)
        if not data:
            raise BrowserError("the browser closed the DevTools connection: "
                               + " | ".join(self._log))
        self._ws.receive_data(data)
        out = []
        for event in self._ws.events():
            if isinstance(event, TextMessage):
                self._partial += event.data
                if event.message_finished:
                    out.append(json.loads(self._partial))
                    self._partial = ""
            elif isinstance(event, Ping):
                self._sock.sendall(self._ws.send(event.response()))
            elif isinstance(event, CloseConnection):
                raise BrowserError(f"DevTools closed the WebSocket: {event.code} {event.reason}")
        return out
