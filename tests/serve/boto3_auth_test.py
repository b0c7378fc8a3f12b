#!/usr/bin/python3
"""spool serve's authentication, as Debian's boto3 (the query protocol) sees it.

Starts the real `spool serve` on a SQLite file with a credentials file, and
signs with botocore's own SigV4 signer: a good key reaches the SQS layer, a
wrong secret, an unknown key, an unsigned request and a request dated 20
minutes ago are refused with the AWS error codes. Needs SPOOL_CLI.
"""
import datetime
import os
import re
import signal
import subprocess
import sys
import tempfile
import types
import unittest
from unittest import mock

import boto3
import botocore
from botocore.config import Config
from botocore.exceptions import ClientError

AUTH_CODES = {"SignatureDoesNotMatch", "InvalidClientTokenId", "MissingAuthenticationToken",
              "IncompleteSignature", "RequestExpired"}


def spool_cli():
    path = os.environ.get("SPOOL_CLI", "")
    if not path or not os.access(path, os.X_OK):
        raise RuntimeError("SPOOL_CLI must name the spool binary (it is set by CTest)")
    return path


class Server:
    def __init__(self, workdir, *flags):
        db = f"sqlite:{workdir}/serve.db"
        subprocess.run([spool_cli(), "--db", db, "migrate"], check=True, capture_output=True, timeout=120)
        self.proc = subprocess.Popen(
            [spool_cli(), "serve", "--db", db, "--listen", "127.0.0.1:0", *flags],
            stderr=subprocess.PIPE, text=True)
        self.url = None
        self.early_stderr = ""  # what it logged before it listened
        for line in self.proc.stderr:
            self.early_stderr += line
            m = re.match(r"listening on (http://\S+)", line)
            if m:
                self.url = m.group(1)
                break
        if self.url is None:
            self.proc.wait(timeout=10)
            rest = self.proc.stderr.read()
            raise RuntimeError(f"spool serve did not start (exit {self.proc.returncode}):\n"
                               f"{self.early_stderr}{rest}")

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        code = self.proc.wait(timeout=30)
        return code


def client(url, key, secret, **config):
    return boto3.client("sqs", endpoint_url=url, region_name="eu-west-1", aws_access_key_id=key,
                        aws_secret_access_key=secret, config=Config(retries={"max_attempts": 1}, **config))


def metrics(url):
    import urllib.request
    with urllib.request.urlopen(url + "/metrics", timeout=10) as r:
        return r.read().decode()


def error_of(call):
    try:
        call()
    except ClientError as e:
        return e.response["Error"]["Code"], e.response["ResponseMetadata"]["HTTPStatusCode"]
    raise AssertionError("the call succeeded")


class SignedRequests(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.TemporaryDirectory()
        creds = os.path.join(cls.dir.name, "credentials")
        with open(creds, "w") as f:
            f.write("# test keys\nAKIDSPOOLTEST s3cr3t/Key+1 123456789012\n")
        cls.server = Server(cls.dir.name, "--credentials", creds)

    @classmethod
    def tearDownClass(cls):
        code = cls.server.stop()
        cls.dir.cleanup()
        assert code == 0, f"spool serve exited {code} on SIGTERM"

    def test_a_request_signed_with_a_known_key_reaches_the_sqs_layer(self):
        r = client(self.server.url, "AKIDSPOOLTEST", "s3cr3t/Key+1").list_queues()
        self.assertEqual(r["ResponseMetadata"]["HTTPStatusCode"], 200)

    def test_a_signature_made_with_a_wrong_secret_is_refused(self):
        code, status = error_of(client(self.server.url, "AKIDSPOOLTEST", "wrong").list_queues)
        self.assertEqual((code, status), ("SignatureDoesNotMatch", 403))

    def test_an_unknown_access_key_is_refused(self):
        code, status = error_of(client(self.server.url, "AKIDUNKNOWN", "s3cr3t/Key+1").list_queues)
        self.assertEqual((code, status), ("InvalidClientTokenId", 403))

    def test_an_unsigned_request_is_refused(self):
        c = client(self.server.url, "x", "y", signature_version=botocore.UNSIGNED)
        code, status = error_of(c.list_queues)
        self.assertEqual((code, status), ("MissingAuthenticationToken", 403))

    def test_a_request_dated_20_minutes_ago_is_refused(self):
        past = datetime.datetime.utcnow() - datetime.timedelta(minutes=20)
        c = client(self.server.url, "AKIDSPOOLTEST", "s3cr3t/Key+1")
        # botocore signs in Python (botocore.auth) or, with awscrt installed as
        # awscli brings it, through the CRT (botocore.crt.auth): backdate both.
        class Past(datetime.datetime):
            @classmethod
            def utcnow(cls):
                return past

        clock = types.SimpleNamespace(datetime=Past, timezone=datetime.timezone, timedelta=datetime.timedelta)
        with mock.patch("botocore.auth.datetime", clock), mock.patch("botocore.crt.auth.datetime", clock):
            code, _ = error_of(c.list_queues)
        self.assertEqual(code, "RequestExpired")

    def test_healthz_answers_without_a_signature(self):
        import urllib.request
        with urllib.request.urlopen(self.server.url + "/healthz", timeout=10) as r:
            self.assertEqual(r.status, 200)
            self.assertIn(b'"ok"', r.read())

    def test_metrics_count_requests_by_action_and_outcome(self):
        import urllib.request
        error_of(client(self.server.url, "AKIDSPOOLTEST", "wrong").list_queues)
        with urllib.request.urlopen(self.server.url + "/metrics", timeout=10) as r:
            text = r.read().decode()
        self.assertRegex(text, r'spool_serve_requests_total\{action="unknown",outcome="SignatureDoesNotMatch"\} [1-9]')

    def test_metrics_time_requests_by_action_and_count_the_waiting_long_polls(self):
        import threading
        import time
        good = client(self.server.url, "AKIDSPOOLTEST", "s3cr3t/Key+1")
        good.list_queues()
        url = good.create_queue(QueueName="metrics-long-poll")["QueueUrl"]
        text = metrics(self.server.url)
        duration = "spool_serve_request_duration_seconds"
        self.assertIn(f"# TYPE {duration} histogram", text)
        self.assertRegex(text, duration + r'_bucket\{action="ListQueues",le="0.001"\} \d+')
        self.assertRegex(text, duration + r'_bucket\{action="ListQueues",le="30"\} [1-9]')
        self.assertRegex(text, duration + r'_bucket\{action="ListQueues",le="\+Inf"\} [1-9]')
        self.assertRegex(text, duration + r'_sum\{action="ListQueues"\} [0-9.]+')
        self.assertRegex(text, duration + r'_count\{action="ListQueues"\} [1-9]')
        self.assertIn("# TYPE spool_serve_long_polls_waiting gauge", text)
        self.assertRegex(text, r"(?m)^spool_serve_long_polls_waiting 0$")

        received = {}
        poller_client = client(self.server.url, "AKIDSPOOLTEST", "s3cr3t/Key+1")
        poller = threading.Thread(
            target=lambda: received.update(poller_client.receive_message(QueueUrl=url, WaitTimeSeconds=20)))
        poller.start()
        seen = False
        try:
            deadline = time.monotonic() + 15  # within the poll's 20 s; the send below ends it
            while not seen and time.monotonic() < deadline:
                seen = re.search(r"(?m)^spool_serve_long_polls_waiting 1$", metrics(self.server.url)) is not None
                time.sleep(0.02)
        finally:
            good.send_message(QueueUrl=url, MessageBody="wake up")  # ends the poll
            poller.join(timeout=30)
        self.assertTrue(seen, "spool_serve_long_polls_waiting never read 1 during the long poll")
        self.assertEqual([m["Body"] for m in received.get("Messages", [])], ["wake up"])
        text = metrics(self.server.url)
        self.assertRegex(text, r"(?m)^spool_serve_long_polls_waiting 0$")
        self.assertRegex(text, duration + r'_count\{action="ReceiveMessage"\} [1-9]')


class Startup(unittest.TestCase):
    def test_the_server_refuses_to_start_without_credentials_or_no_auth(self):
        with tempfile.TemporaryDirectory() as d:
            p = subprocess.run([spool_cli(), "serve", "--db", f"sqlite:{d}/x.db", "--listen", "127.0.0.1:0"],
                               capture_output=True, text=True, timeout=30)
        self.assertEqual(p.returncode, 1)
        self.assertIn("--credentials", p.stderr)
        self.assertIn("--no-auth", p.stderr)

    def test_no_auth_serves_unsigned_requests_and_says_so_at_start(self):
        with tempfile.TemporaryDirectory() as d:
            s = Server(d, "--no-auth")
            try:
                c = client(s.url, "x", "y", signature_version=botocore.UNSIGNED)
                self.assertEqual(c.list_queues()["ResponseMetadata"]["HTTPStatusCode"], 200)
            finally:
                self.assertEqual(s.stop(), 0)
                self.assertIn("--no-auth", s.early_stderr + s.proc.stderr.read())


if __name__ == "__main__":
    import warnings
    warnings.simplefilter("ignore", ResourceWarning)  # boto3 clients left to the collector
    unittest.main(verbosity=2)
