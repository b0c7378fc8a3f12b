"""spool serve under hostile HTTP (issue 18, docs/SECURITY.md): huge headers, too many headers, huge
URIs, garbage, lying or absurd Content-Length, oversized and malformed bodies, and clients that stall.
Each gets a 4xx or a closed connection, never a 5xx, a crash or a hang; the server stays healthy and a
real SDK client is served meanwhile, also while more stalled connections are open than the server has
threads. Raw sockets for the hostile side; boto3 for the well-behaved one."""
import socket
import time
import unittest
import urllib.request

from botocore.config import Config

import sqs_support as s

PATIENCE = 30  # seconds a hostile exchange may take before it counts as a hang


def exchange(addr, data, patience=PATIENCE):
    """Sends data on a fresh connection; returns (status or None if closed without one, seconds taken)."""
    start = time.monotonic()
    c = socket.create_connection(addr)
    c.settimeout(patience)
    try:
        try:
            c.sendall(data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the server refused mid-send; its answer may still be readable
        out = b""
        while b"\r\n" not in out:
            try:
                chunk = c.recv(4096)
            except ConnectionResetError:
                break
            if not chunk:
                break
            out += chunk
        status = int(out.split(b" ")[1]) if out.startswith(b"HTTP/1.1 ") else None
        return status, time.monotonic() - start
    finally:
        c.close()


def read_response(c, buf):
    """Reads one response from c (buf: bytes already read); returns (status, headers, rest of buf)."""
    while b"\r\n\r\n" not in buf:
        chunk = c.recv(65536)
        if not chunk:
            raise ConnectionError("the server hung up before answering")
        buf += chunk
    head, buf = buf.split(b"\r\n\r\n", 1)
    lines = head.split(b"\r\n")
    headers = {k.strip().lower(): v.strip() for k, v in (line.split(b":", 1) for line in lines[1:])}
    length = int(headers.get(b"content-length", b"0"))
    while len(buf) < length:
        chunk = c.recv(65536)
        if not chunk:
            raise ConnectionError("the server hung up inside a body")
        buf += chunk
    return int(lines[0].split(b" ")[1]), headers, buf[length:]


class HostileHttp(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        import tempfile
        cls.tmp = tempfile.TemporaryDirectory()
        cls.server = s.Server(s.fresh_database(cls.tmp.name), "--no-auth")
        host, port = cls.server.url.split("//")[1].split(":")
        cls.addr = (host, int(port))
        cls.sqs = s.client(cls.server.url, connect_timeout=PATIENCE, read_timeout=PATIENCE)
        cls.queue = cls.sqs.create_queue(QueueName="hostile")["QueueUrl"]

    @classmethod
    def tearDownClass(cls):
        assert cls.server.stop() == 0, "spool serve did not stop cleanly"
        cls.tmp.cleanup()

    def assert_refused(self, name, data, allowed=range(400, 500)):
        status, took = exchange(self.addr, data)
        self.assertTrue(status is None or status in allowed, f"{name}: status {status}")
        self.assertLess(took, PATIENCE, f"{name}: the server held the connection")
        self.assert_healthy(name)
        return status

    def assert_healthy(self, name):
        with urllib.request.urlopen(self.server.url + "/healthz", timeout=PATIENCE) as r:
            self.assertEqual(r.status, 200, f"after {name}")
        self.sqs.send_message(QueueUrl=self.queue, MessageBody=f"after {name}")
        self.assertTrue(self.sqs.receive_message(QueueUrl=self.queue).get("Messages"), f"after {name}")

    def test_oversized_request_heads_are_refused(self):
        self.assertEqual(self.assert_refused("a 200 KB header", b"POST / HTTP/1.1\r\nHost: x\r\nX-Big: " +
                                             b"a" * 200_000 + b"\r\n\r\n"), 400)
        self.assert_refused("20,000 headers", b"POST / HTTP/1.1\r\nHost: x\r\n" +
                            b"".join(b"X-%d: v\r\n" % i for i in range(20_000)) + b"\r\n")
        self.assertEqual(self.assert_refused("a 100 KB URI", b"GET /" + b"a" * 100_000 +
                                             b" HTTP/1.1\r\nHost: x\r\n\r\n"), 414)
        self.assertEqual(self.assert_refused("garbage", b"\x00\x01\x02 garbage\r\n\r\n"), 400)

    def test_lying_or_absurd_lengths_and_bodies_are_refused(self):
        head = (b"POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-amz-json-1.0\r\n"
                b"X-Amz-Target: AmazonSQS.ListQueues\r\n")
        for cl in (b"abc", b"-5", b"99999999999999999999", b"1, 2"):
            self.assert_refused(f"Content-Length {cl!r}", head + b"Content-Length: " + cl + b"\r\n\r\n{}")
        self.assertEqual(self.assert_refused("a 5 MB body", head + b"Content-Length: 5000000\r\n\r\n" +
                                             b"{" * 5_000_000), 413)
        self.assert_refused("a broken chunk", b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                            b"zz\r\nabc\r\n0\r\n\r\n")
        # A body shorter than announced: the client stalls, and the server hangs up.
        self.assert_refused("a short body", head + b"Content-Length: 100\r\n\r\n{\"Queue")

    def test_malformed_sqs_bodies_get_typed_client_errors(self):
        def post(body, ctype=b"application/x-amz-json-1.0", target=b"AmazonSQS.SendMessage"):
            return (b"POST / HTTP/1.1\r\nHost: x\r\nContent-Type: " + ctype + b"\r\nX-Amz-Target: " + target +
                    b"\r\nContent-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
        for name, req in [
            ("JSON that does not parse", post(b"{\"QueueUrl\": ")),
            ("a JSON array", post(b"[1,2,3]")),
            ("a wrongly typed member", post(b"{\"QueueUrl\": 7, \"MessageBody\": {\"a\": 1}}")),
            ("NUL and invalid UTF-8", post(b"{\"QueueUrl\": \"x\\u0000\", \"MessageBody\": \"\xff\xfe\"}")),
            ("deep nesting", post(b"[" * 100_000 + b"]" * 100_000)),
            ("an unknown action", post(b"{}", target=b"AmazonSQS.DropDatabase")),
            ("no target", post(b"{}", target=b"")),
            ("a form with broken escapes", post(b"Action=ListQueues&QueueNamePrefix=%zz%",
                                                ctype=b"application/x-www-form-urlencoded", target=b"")),
            ("a form with a NUL", post(b"Action=SendMessage&QueueUrl=%00&MessageBody=x",
                                       ctype=b"application/x-www-form-urlencoded", target=b"")),
            ("a form without an action", post(b"QueueUrl=x", ctype=b"application/x-www-form-urlencoded",
                                              target=b"")),
        ]:
            with self.subTest(name):
                status = self.assert_refused(name, req)
                self.assertIsNotNone(status, f"{name}: closed without an answer")

    def test_error_answers_quoting_hostile_bytes_stay_well_formed(self):
        # Error messages may quote the request (an unknown action's name): NUL, control characters
        # and invalid UTF-8 must not make the XML or JSON answer unreadable.
        import json
        import urllib.error
        import xml.etree.ElementTree as ET
        for body, ctype, target, parse in [
            (b"Action=Nope%00%01%ff%fe%1b", "application/x-www-form-urlencoded", None, ET.fromstring),
            (b"{}", "application/x-amz-json-1.0", "AmazonSQS.No\x01pe\xff", json.loads),
        ]:
            headers = {"Content-Type": ctype}
            if target:
                headers["X-Amz-Target"] = target.encode("latin-1").decode("unicode_escape")
            req = urllib.request.Request(self.server.url + "/", data=body, headers=headers)
            with self.assertRaises(urllib.error.HTTPError) as caught:
                urllib.request.urlopen(req, timeout=PATIENCE)
            self.assertEqual(caught.exception.code, 400)
            answer = caught.exception.read()
            answer.decode("utf-8")  # valid UTF-8
            parse(answer)  # and well-formed

    def test_a_keep_alive_connection_serves_a_hundred_requests_and_then_is_closed(self):
        # SDKs keep their connections: a reconnect every few calls costs a handshake and a thread
        # hand-off each time. The bound still gives connections waiting beyond the threads a turn.
        c = socket.create_connection(self.addr)
        c.settimeout(PATIENCE)
        try:
            buf = b""
            for i in range(100):
                c.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
                status, headers, buf = read_response(c, buf)
                self.assertEqual(status, 200, f"request {i + 1}")
                closing = headers.get(b"connection", b"").lower() == b"close"
                self.assertEqual(closing, i == 99, f"request {i + 1}: Connection {headers.get(b'connection')}")
            self.assertEqual(c.recv(1), b"", "the connection stayed open after its hundredth request")
        finally:
            c.close()

    def test_stalled_clients_beyond_the_thread_count_do_not_starve_a_real_client(self):
        # More connections than spool serve has threads (64), each sending half a request and then
        # nothing, and some trickling the start of a body.
        stalled = []
        for i in range(100):
            c = socket.create_connection(self.addr)
            c.sendall(b"POST / HTTP/1.1\r\nHost: x\r\n" if i % 2 else
                      b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n{")
            stalled.append(c)
        try:
            # The SDK waits at most PATIENCE: the server must get to it by then.
            self.sqs.send_message(QueueUrl=self.queue, MessageBody="while stalled")
            got = self.sqs.receive_message(QueueUrl=self.queue, MaxNumberOfMessages=10).get("Messages", [])
            self.assertTrue(got)
            # The stalled connections are hung up on, not kept.
            closed = 0
            for c in stalled:
                c.settimeout(PATIENCE)
                try:
                    c.recv(1)  # b"" (hung up) or the first byte of a refusal
                    closed += 1
                except ConnectionResetError:
                    closed += 1
                except socket.timeout:
                    pass
            self.assertEqual(closed, len(stalled), "stalled connections left open")
        finally:
            for c in stalled:
                c.close()
        self.assert_healthy("stalled clients")


if __name__ == "__main__":
    unittest.main(verbosity=2)
