"""Shared by spool serve's client tests: a database per test run on the
engine named by SPOOL_SQS_ENGINE (sqlite or postgres), the real `spool
serve` on it, and boto3 clients. A component that cannot start fails the
test loudly; nothing is skipped."""
import os
import re
import signal
import subprocess
import tempfile
import time
import urllib.request
import uuid

import unittest

import boto3
from botocore.config import Config
from botocore.exceptions import ClientError


def spool_cli():
    path = os.environ.get("SPOOL_CLI", "")
    if not path or not os.access(path, os.X_OK):
        raise RuntimeError("SPOOL_CLI must name the spool binary (it is set by CTest)")
    return path


def fresh_database(workdir):
    """A migrated database on the engine of SPOOL_SQS_ENGINE; returns its URI."""
    engine = os.environ.get("SPOOL_SQS_ENGINE", "sqlite")
    if engine == "sqlite":
        uri = f"sqlite:{workdir}/sqs.db"
    elif engine == "postgres":
        pg_dir = os.environ.get("SPOOL_TEST_PG_DIR", "")
        with open(os.path.join(pg_dir, "uri")) as f:
            admin = f.read().strip()
        name = "sqs_" + uuid.uuid4().hex[:12]
        subprocess.run(["psql", admin, "-q", "-c", f"CREATE DATABASE {name}"], check=True, capture_output=True)
        uri = admin.rsplit("/", 1)[0] + "/" + name
    else:
        raise RuntimeError(f"SPOOL_SQS_ENGINE must be sqlite or postgres, not {engine!r}")
    subprocess.run([spool_cli(), "--db", uri, "migrate"], check=True, capture_output=True, timeout=120)
    return uri


class Server:
    """`spool serve` on a free port; stop() sends SIGTERM and returns its exit code."""

    def __init__(self, uri, *flags):
        self.uri = uri
        self.proc = subprocess.Popen([spool_cli(), "--db", uri, "serve", "--listen", "127.0.0.1:0", *flags],
                                     stderr=subprocess.PIPE, text=True)
        self.url = None
        self.early_stderr = ""
        for line in self.proc.stderr:
            self.early_stderr += line
            m = re.match(r"listening on (http://\S+)", line)
            if m:
                self.url = m.group(1)
                break
        if self.url is None:
            self.proc.wait(timeout=10)
            raise RuntimeError(f"spool serve did not start (exit {self.proc.returncode}): {self.early_stderr}")

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout=60)


def client(url, key="x", secret="y", **config):
    return boto3.client("sqs", endpoint_url=url, region_name="eu-west-1", aws_access_key_id=key,
                        aws_secret_access_key=secret, config=Config(retries={"max_attempts": 1}, **config))


def md5_of_attributes(attributes):
    """MD5OfMessageAttributes as the SQS documentation defines it, written here independently."""
    import hashlib
    import struct

    def prefixed(b):
        return struct.pack(">I", len(b)) + b

    out = b""
    for name in sorted(attributes):
        a = attributes[name]
        out += prefixed(name.encode()) + prefixed(a["DataType"].encode())
        if "BinaryValue" in a:
            out += b"\x02" + prefixed(a["BinaryValue"])
        else:
            out += b"\x01" + prefixed(a["StringValue"].encode())
    return hashlib.md5(out).hexdigest()


def wait_for_waiting_long_polls(url, n, timeout=30):
    """True once the server's /metrics says n long polls wait (a started
    poll's request can reach the server late on a loaded machine)."""
    deadline = time.monotonic() + timeout
    pattern = re.compile(rf"(?m)^spool_serve_long_polls_waiting {n}$")
    while time.monotonic() < deadline:
        with urllib.request.urlopen(url + "/metrics", timeout=10) as r:
            if pattern.search(r.read().decode()):
                return True
        time.sleep(0.02)
    return False


def temp_dir():
    return tempfile.TemporaryDirectory(prefix="spool-sqs-")


def code_of(call, *args, **kwargs):
    """The AWS error code of a call that must fail."""
    try:
        call(*args, **kwargs)
    except ClientError as e:
        return e.response["Error"]["Code"]
    raise AssertionError("the call succeeded")


class ServedTestCase(unittest.TestCase):
    """One `spool serve --no-auth` on a fresh database for the whole class, as cls.server and cls.sqs."""

    @classmethod
    def setUpClass(cls):
        cls.dir = temp_dir()
        cls.uri = fresh_database(cls.dir.name)
        cls.server = Server(cls.uri, "--no-auth")
        cls.sqs = client(cls.server.url)

    @classmethod
    def tearDownClass(cls):
        code = cls.server.stop()
        cls.dir.cleanup()
        assert code == 0, f"spool serve exited {code} on SIGTERM"
