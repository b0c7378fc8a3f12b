#!/usr/bin/python3
"""spool serve over HTTPS (--tls-cert/--tls-key), as Debian's boto3 sees it.

Makes a throwaway CA and a server certificate for 127.0.0.1 and localhost
with the openssl CLI, starts the real `spool serve` with them on a migrated
SQLite file, and checks: boto3 trusting the CA creates a queue (its URL is
https://), sends and receives; a client that does not trust the CA fails
its handshake; a plain-HTTP request to the TLS port gets no HTTP answer;
half the TLS options, or files that do not load, stop the server at start
with exit code 1 and a message. Needs SPOOL_CLI.
"""
import http.client
import os
import re
import signal
import ssl
import subprocess
import tempfile
import unittest
import urllib.request

import boto3
import botocore
from botocore.config import Config
from botocore.exceptions import SSLError

OPENSSL_CONFIG = """
[req]
distinguished_name = dn
prompt = no
[dn]
CN = spool-test
[ca]
basicConstraints = critical, CA:TRUE
keyUsage = critical, keyCertSign, cRLSign
subjectKeyIdentifier = hash
[server]
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature, keyEncipherment
extendedKeyUsage = serverAuth
subjectAltName = IP:127.0.0.1, DNS:localhost
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid
"""


def spool_cli():
    path = os.environ.get("SPOOL_CLI", "")
    if not path or not os.access(path, os.X_OK):
        raise RuntimeError("SPOOL_CLI must name the spool binary (it is set by CTest)")
    return path


def openssl(*args):
    subprocess.run(["openssl", *args], check=True, capture_output=True, timeout=60)


def make_certificates(d):
    """A CA (ca.pem) and a server certificate it signed (server.pem, server.key) in d."""
    cnf = os.path.join(d, "openssl.cnf")
    with open(cnf, "w") as f:
        f.write(OPENSSL_CONFIG)
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    p = lambda name: os.path.join(d, name)  # noqa: E731
    openssl("req", "-x509", "-new", *ec, "-keyout", p("ca.key"), "-out", p("ca.pem"), "-days", "2",
            "-config", cnf, "-extensions", "ca", "-subj", "/CN=Spool test CA")
    openssl("req", "-new", *ec, "-keyout", p("server.key"), "-out", p("server.csr"), "-config", cnf,
            "-subj", "/CN=127.0.0.1")
    openssl("x509", "-req", "-in", p("server.csr"), "-CA", p("ca.pem"), "-CAkey", p("ca.key"),
            "-set_serial", str(int.from_bytes(os.urandom(8), "big")), "-days", "2", "-out", p("server.pem"),
            "-extfile", cnf, "-extensions", "server")


def migrated_database(d, name):
    db = f"sqlite:{d}/{name}.db"
    subprocess.run([spool_cli(), "--db", db, "migrate"], check=True, capture_output=True, timeout=120)
    return db


class Server:
    """`spool serve` on a free port of 127.0.0.1; url is what it says it listens on."""

    def __init__(self, db, *flags):
        self.proc = subprocess.Popen([spool_cli(), "serve", "--db", db, "--listen", "127.0.0.1:0", *flags],
                                     stderr=subprocess.PIPE, text=True)
        self.url = None
        early = ""
        for line in self.proc.stderr:
            early += line
            m = re.match(r"listening on (\S+)", line)
            if m:
                self.url = m.group(1)
                break
        if self.url is None:
            self.proc.wait(timeout=10)
            raise RuntimeError(f"spool serve did not start (exit {self.proc.returncode}):\n"
                               f"{early}{self.proc.stderr.read()}")

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout=30)


def client(url, **kwargs):
    return boto3.client("sqs", endpoint_url=url, region_name="eu-west-1", aws_access_key_id="x",
                        aws_secret_access_key="y",
                        config=Config(retries={"max_attempts": 1}, signature_version=botocore.UNSIGNED),
                        **kwargs)


class Https(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.TemporaryDirectory(prefix="spool-tls-")
        d = cls.dir.name
        make_certificates(d)
        cls.ca = os.path.join(d, "ca.pem")
        cls.server = Server(migrated_database(d, "serve"), "--no-auth", "--tls-cert",
                            os.path.join(d, "server.pem"), "--tls-key", os.path.join(d, "server.key"))

    @classmethod
    def tearDownClass(cls):
        code = cls.server.stop()
        cls.dir.cleanup()
        assert code == 0, f"spool serve exited {code} on SIGTERM"

    def test_the_server_says_it_listens_on_https(self):
        self.assertRegex(self.server.url, r"^https://127\.0\.0\.1:\d+$")

    def test_boto3_trusting_the_ca_creates_sends_and_receives(self):
        sqs = client(self.server.url, verify=self.ca)
        url = sqs.create_queue(QueueName="tls-orders")["QueueUrl"]
        self.assertTrue(url.startswith(self.server.url + "/"), url)
        self.assertIn(url, sqs.list_queues()["QueueUrls"])
        sqs.send_message(QueueUrl=url, MessageBody="over https")
        got = sqs.receive_message(QueueUrl=url, WaitTimeSeconds=5).get("Messages", [])
        self.assertEqual([m["Body"] for m in got], ["over https"])
        sqs.delete_message(QueueUrl=url, ReceiptHandle=got[0]["ReceiptHandle"])
        sqs.delete_queue(QueueUrl=url)

    def test_localhost_is_a_name_of_the_certificate_too(self):
        port = self.server.url.rsplit(":", 1)[1]
        sqs = client(f"https://localhost:{port}", verify=self.ca)
        self.assertEqual(sqs.list_queues()["ResponseMetadata"]["HTTPStatusCode"], 200)

    def test_healthz_and_metrics_answer_over_https(self):
        context = ssl.create_default_context(cafile=self.ca)
        with urllib.request.urlopen(self.server.url + "/healthz", timeout=10, context=context) as r:
            self.assertEqual(r.status, 200)
        with urllib.request.urlopen(self.server.url + "/metrics", timeout=10, context=context) as r:
            self.assertIn("spool_serve_long_polls_waiting", r.read().decode())

    def test_a_client_that_does_not_trust_the_ca_fails_its_handshake(self):
        # verify=None: botocore's own CA bundle, which does not hold the test CA.
        with self.assertRaises(SSLError) as caught:
            client(self.server.url).list_queues()
        self.assertIn("CERTIFICATE_VERIFY_FAILED", str(caught.exception))

    def test_plain_http_to_the_tls_port_gets_no_http_answer(self):
        port = int(self.server.url.rsplit(":", 1)[1])
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        try:
            conn.request("GET", "/healthz")
            # No status line comes back: the server ends the connection, at most
            # after a TLS alert, which is no HTTP response.
            with self.assertRaises((http.client.HTTPException, ConnectionError)):
                conn.getresponse()
        except ConnectionError:
            pass  # closed while the request was still being written
        finally:
            conn.close()
        # ... and the server still serves HTTPS.
        again = client(self.server.url, verify=self.ca).list_queues()
        self.assertEqual(again["ResponseMetadata"]["HTTPStatusCode"], 200)


class Startup(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.TemporaryDirectory(prefix="spool-tls-start-")
        make_certificates(cls.dir.name)
        cls.db = migrated_database(cls.dir.name, "startup")

    @classmethod
    def tearDownClass(cls):
        cls.dir.cleanup()

    def path(self, name):
        return os.path.join(self.dir.name, name)

    def start(self, *flags):
        return subprocess.run([spool_cli(), "serve", "--db", self.db, "--no-auth", "--listen", "127.0.0.1:0",
                               *flags], capture_output=True, text=True, timeout=60)

    def test_tls_cert_without_tls_key_exits_1_naming_both(self):
        for flags in (["--tls-cert", self.path("server.pem")], ["--tls-key", self.path("server.key")]):
            p = self.start(*flags)
            self.assertEqual(p.returncode, 1, p.stderr)
            self.assertIn("--tls-cert", p.stderr)
            self.assertIn("--tls-key", p.stderr)
            self.assertNotIn("listening on", p.stderr)

    def test_a_certificate_that_does_not_load_exits_1(self):
        p = self.start("--tls-cert", self.path("missing.pem"), "--tls-key", self.path("server.key"))
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn("certificate", p.stderr)
        self.assertIn("missing.pem", p.stderr)

    def test_a_file_that_is_no_key_exits_1(self):
        p = self.start("--tls-cert", self.path("server.pem"), "--tls-key", self.path("openssl.cnf"))
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn("private key", p.stderr)
        self.assertIn("openssl.cnf", p.stderr)

    def test_a_key_of_another_certificate_exits_1(self):
        p = self.start("--tls-cert", self.path("server.pem"), "--tls-key", self.path("ca.key"))
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn("private key", p.stderr)
        self.assertIn("ca.key", p.stderr)


if __name__ == "__main__":
    import warnings
    warnings.simplefilter("ignore", ResourceWarning)  # boto3 clients left to the collector
    unittest.main(verbosity=2)
