"""A JetStream API that can be made unavailable on demand: a forwarder on a real NATS subject.

`ApiProxy(url, "$PX.API")` subscribes to `$PX.API.>` on a real server and
forwards each request to `$JS.API.` of that server with the client's reply
subject (the server answers the client directly); a client with the option
`apiPrefix=$PX.API` then talks to JetStream through it, and `requests` lists
every API subject it used.
Before the proxy starts (or after it stops) the server itself answers "no
responders" (status 503), exactly what a client sees while JetStream is not
there (a starting server, a cluster without a leader). `unavailable=N` answers
the first N requests with the API's own 503 error (`JetStream system
temporarily unavailable`, err_code 10008, as nats-server sends during a
leader election); `swallow=N` drops the first N (a request that times out);
`drop` names APIs (e.g. "CONSUMER.RESET") that never get an answer, like a
server too old to know them; `relay` names APIs (e.g. "STREAM.INFO") whose
replies pass through the proxy and are kept in `replies` (subject, JSON).
Not collected by pytest (no `test_` prefix).
"""

from __future__ import annotations

import json
import threading

from spark_jetstream.client import LeanConnection, NatsTimeoutError
from spark_jetstream.options import ConnectionOptions

UNAVAILABLE = {"code": 503, "err_code": 10008, "description": "JetStream system temporarily unavailable"}


class ApiProxy:
    def __init__(
        self,
        url: str,
        prefix: str,
        *,
        unavailable: int = 0,
        swallow: int = 0,
        drop: tuple[str, ...] = (),
        relay: tuple[str, ...] = (),
    ) -> None:
        self.drop = drop
        self.relay = relay
        self.replies: list[tuple[str, dict]] = []
        self.url = url
        self.prefix = prefix
        self.unavailable = unavailable
        self.swallow = swallow
        self.requests: list[str] = []
        self.error: BaseException | None = None
        self._stop = threading.Event()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> ApiProxy:
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("the API proxy did not start")
        return self

    def start_later(self, delay_s: float) -> threading.Timer:
        timer = threading.Timer(delay_s, self.start)
        timer.start()
        return timer

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(10)

    def __enter__(self) -> ApiProxy:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _run(self) -> None:
        try:
            with LeanConnection.connect(ConnectionOptions(servers=(self.url,))) as conn:
                sid = conn.subscribe(self.prefix + ".>")
                conn.flush(5)
                self._ready.set()
                while not self._stop.is_set():
                    try:
                        frame = conn.wait_for_sid(sid, timeout=0.1)
                    except NatsTimeoutError:
                        continue
                    subject, reply, payload = frame[1].decode(), frame[3].decode(), frame[5]
                    self.requests.append(subject)
                    if any(subject.startswith(f"{self.prefix}.{api}.") for api in self.drop):
                        continue
                    if self.swallow > 0:
                        self.swallow -= 1
                        continue
                    if self.unavailable > 0:
                        self.unavailable -= 1
                        conn.publish(reply, json.dumps({"error": UNAVAILABLE}).encode())
                        continue
                    api = "$JS.API." + subject[len(self.prefix) + 1 :]
                    if any(subject.startswith(f"{self.prefix}.{name}.") for name in self.relay):
                        _, answer = conn.request(api, payload, timeout=10)
                        self.replies.append((subject, json.loads(answer)))
                        conn.publish(reply, answer)
                        continue
                    # forwarded with the client's reply subject: the server answers the client
                    # directly (also the stream of messages a pull request gets)
                    conn.publish("$JS.API." + subject[len(self.prefix) + 1 :], payload, reply=reply)
        except BaseException as exc:  # reported by the test through self.error
            self.error = exc
            self._ready.set()
