#!/usr/bin/python3
"""FIFO queues, dead-letter queues and retention of spool serve, as Debian's
boto3 (the query protocol) uses them, on the engine of SPOOL_SQS_ENGINE."""
import hashlib
import time
import unittest

import sqs_support as s
from sqs_support import code_of


class Served(s.ServedTestCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        # Retention is at least 60 s: this queue's message is sent first and checked last.
        cls.retention_url = cls.sqs.create_queue(QueueName="q-retention",
                                                 Attributes={"MessageRetentionPeriod": "60"})["QueueUrl"]
        cls.sqs.send_message(QueueUrl=cls.retention_url, MessageBody="short-lived")
        cls.retention_sent = time.monotonic()

    def fifo(self, name, **attributes):
        attrs = {"FifoQueue": "true", **{k: str(v) for k, v in attributes.items()}}
        return self.sqs.create_queue(QueueName=name, Attributes=attrs)["QueueUrl"]

    def arn(self, url):
        return self.sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]

    # ---- FIFO ----
    def test_a_fifo_queue_needs_its_attribute_and_reports_its_defaults(self):
        self.assertEqual(code_of(self.sqs.create_queue, QueueName="q-nofifo.fifo"), "InvalidParameterValue")
        self.assertEqual(code_of(self.sqs.create_queue, QueueName="q-std", Attributes={"FifoQueue": "true"}),
                         "InvalidParameterValue")
        self.assertEqual(code_of(self.sqs.create_queue, QueueName="q-std2",
                                 Attributes={"ContentBasedDeduplication": "true"}), "InvalidAttributeName")
        url = self.fifo("q-defaults.fifo")
        attrs = self.sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
        self.assertEqual((attrs["FifoQueue"], attrs["ContentBasedDeduplication"], attrs["DeduplicationScope"]),
                         ("true", "false", "queue"))

    def test_fifo_sends_need_a_group_and_a_deduplication_id_and_take_no_message_delay(self):
        url = self.fifo("q-rules.fifo")
        self.assertEqual(code_of(self.sqs.send_message, QueueUrl=url, MessageBody="x", MessageDeduplicationId="d"),
                         "MissingParameter")
        self.assertEqual(code_of(self.sqs.send_message, QueueUrl=url, MessageBody="x", MessageGroupId="g"),
                         "InvalidParameterValue")
        self.assertEqual(code_of(self.sqs.send_message, QueueUrl=url, MessageBody="x", MessageGroupId="g",
                                 MessageDeduplicationId="d", DelaySeconds=5), "InvalidParameterValue")
        self.assertEqual(code_of(self.sqs.send_message, QueueUrl=url, MessageBody="x", MessageGroupId="g" * 129,
                                 MessageDeduplicationId="d"), "InvalidParameterValue")
        self.assertEqual(self.sqs.receive_message(QueueUrl=url).get("Messages", []), [])

    def test_a_group_is_received_in_send_order_and_never_while_an_earlier_message_is_in_flight(self):
        url = self.fifo("q-order.fifo")
        sent = {"a": [], "b": []}
        sequence = []
        for i in range(6):
            group = "a" if i % 3 else "b"
            r = self.sqs.send_message(QueueUrl=url, MessageBody=f"{group}{i}", MessageGroupId=group,
                                      MessageDeduplicationId=f"d{i}")
            sent[group].append(f"{group}{i}")
            sequence.append(int(r["SequenceNumber"]))
        self.assertEqual(sequence, sorted(sequence))
        self.assertEqual(len(set(sequence)), 6)
        got = {"a": [], "b": []}
        for _ in range(20):
            batch = self.sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10,
                                             AttributeNames=["All"]).get("Messages", [])
            if not batch:
                break
            groups = [m["Attributes"]["MessageGroupId"] for m in batch]
            self.assertEqual(len(groups), len(set(groups)), "two messages of one group in flight at once")
            # While they are in flight, their groups give nothing more.
            more = self.sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages", [])
            self.assertEqual(more, [])
            for m in batch:
                got[m["Attributes"]["MessageGroupId"]].append(m["Body"])
                self.assertEqual(len(m["Attributes"]["SequenceNumber"]), 20)
                self.sqs.delete_message(QueueUrl=url, ReceiptHandle=m["ReceiptHandle"])
        self.assertEqual(got, sent)

    def test_a_deduplication_id_sent_again_within_five_minutes_sends_nothing(self):
        url = self.fifo("q-dedup.fifo")
        first = self.sqs.send_message(QueueUrl=url, MessageBody="one", MessageGroupId="g",
                                      MessageDeduplicationId="same")
        again = self.sqs.send_message(QueueUrl=url, MessageBody="two", MessageGroupId="g",
                                      MessageDeduplicationId="same")
        self.assertEqual((again["MessageId"], again["SequenceNumber"]), (first["MessageId"], first["SequenceNumber"]))
        m = self.sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, AttributeNames=["All"])["Messages"]
        self.assertEqual([x["Body"] for x in m], ["one"])
        self.assertEqual(m[0]["Attributes"]["MessageDeduplicationId"], "same")
        self.assertEqual(m[0]["Attributes"]["SequenceNumber"], first["SequenceNumber"])
        # Deleted, it is still remembered.
        self.sqs.delete_message(QueueUrl=url, ReceiptHandle=m[0]["ReceiptHandle"])
        self.sqs.send_message(QueueUrl=url, MessageBody="three", MessageGroupId="g", MessageDeduplicationId="same")
        self.assertEqual(self.sqs.receive_message(QueueUrl=url).get("Messages", []), [])

    def test_content_based_deduplication_uses_the_body_and_a_batch_dedups_within_itself(self):
        url = self.fifo("q-content.fifo", ContentBasedDeduplication="true")
        r = self.sqs.send_message_batch(QueueUrl=url, Entries=[
            {"Id": "1", "MessageBody": "same body", "MessageGroupId": "g"},
            {"Id": "2", "MessageBody": "same body", "MessageGroupId": "g"},
            {"Id": "3", "MessageBody": "other body", "MessageGroupId": "g"},
            {"Id": "4", "MessageBody": "no group"}])
        ok = {e["Id"]: e for e in r["Successful"]}
        self.assertEqual(sorted(ok), ["1", "2", "3"])
        self.assertEqual(ok["1"]["MessageId"], ok["2"]["MessageId"])
        self.assertEqual([f["Id"] for f in r["Failed"]], ["4"])
        bodies = []
        for _ in range(3):
            for m in self.sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10,
                                              AttributeNames=["All"]).get("Messages", []):
                bodies.append(m["Body"])
                self.assertEqual(m["Attributes"]["MessageDeduplicationId"],
                                 hashlib.sha256(m["Body"].encode()).hexdigest())
                self.sqs.delete_message(QueueUrl=url, ReceiptHandle=m["ReceiptHandle"])
        self.assertEqual(bodies, ["same body", "other body"])

    def test_deduplication_scoped_to_the_group_lets_two_groups_share_an_id(self):
        url = self.fifo("q-scope.fifo", DeduplicationScope="messageGroup", FifoThroughputLimit="perMessageGroupId")
        a = self.sqs.send_message(QueueUrl=url, MessageBody="a", MessageGroupId="a", MessageDeduplicationId="d")
        b = self.sqs.send_message(QueueUrl=url, MessageBody="b", MessageGroupId="b", MessageDeduplicationId="d")
        self.assertNotEqual(a["MessageId"], b["MessageId"])

    # ---- system attributes ----
    def test_the_first_receive_time_is_reported_and_kept_by_later_receives(self):
        url = self.sqs.create_queue(QueueName="q-first-receive")["QueueUrl"]
        self.sqs.send_message(QueueUrl=url, MessageBody="m")
        before = int(time.time() * 1000)
        first = self.sqs.receive_message(QueueUrl=url, AttributeNames=["All"])["Messages"][0]
        after = int(time.time() * 1000)
        at = int(first["Attributes"]["ApproximateFirstReceiveTimestamp"])
        self.assertTrue(before - 1000 <= at <= after + 1000, (before, at, after))
        self.sqs.change_message_visibility(QueueUrl=url, ReceiptHandle=first["ReceiptHandle"], VisibilityTimeout=0)
        time.sleep(0.05)
        again = self.sqs.receive_message(QueueUrl=url, AttributeNames=["ApproximateFirstReceiveTimestamp",
                                                                       "ApproximateReceiveCount"])["Messages"][0]
        self.assertEqual(again["Attributes"]["ApproximateFirstReceiveTimestamp"], str(at))
        self.assertEqual(again["Attributes"]["ApproximateReceiveCount"], "2")
        self.assertEqual(again["Body"], "m")

    # ---- dead-letter queues ----
    def test_a_message_received_more_than_max_receive_count_moves_to_the_dead_letter_queue(self):
        dlq = self.sqs.create_queue(QueueName="q-dlq")["QueueUrl"]
        policy = '{"deadLetterTargetArn":"%s","maxReceiveCount":"2"}' % self.arn(dlq)
        src = self.sqs.create_queue(QueueName="q-src", Attributes={"RedrivePolicy": policy})["QueueUrl"]
        self.sqs.send_message(QueueUrl=src, MessageBody="poison",
                              MessageAttributes={"k": {"DataType": "String", "StringValue": "v"}})
        for expected in (1, 2):
            m = self.sqs.receive_message(QueueUrl=src, AttributeNames=["All"])["Messages"][0]
            self.assertEqual(m["Attributes"]["ApproximateReceiveCount"], str(expected))
            self.sqs.change_message_visibility(QueueUrl=src, ReceiptHandle=m["ReceiptHandle"], VisibilityTimeout=0)
        self.assertEqual(self.sqs.receive_message(QueueUrl=src).get("Messages", []), [])
        moved = self.sqs.receive_message(QueueUrl=dlq, MessageAttributeNames=["All"])["Messages"]
        self.assertEqual([x["Body"] for x in moved], ["poison"])
        self.assertEqual(moved[0]["MessageAttributes"]["k"]["StringValue"], "v")
        self.assertEqual(self.sqs.list_dead_letter_source_queues(QueueUrl=dlq)["queueUrls"], [src])

    def test_a_redrive_policy_must_name_an_existing_queue_of_the_same_type(self):
        policy = '{"deadLetterTargetArn":"arn:aws:sqs:us-east-1:000000000000:q-none","maxReceiveCount":"2"}'
        self.assertEqual(code_of(self.sqs.create_queue, QueueName="q-bad-dlq", Attributes={"RedrivePolicy": policy}),
                         "InvalidParameterValue")
        self.assertEqual(code_of(self.sqs.create_queue, QueueName="q-bad-dlq",
                                 Attributes={"RedrivePolicy": "{not json"}), "InvalidParameterValue")
        std = self.sqs.create_queue(QueueName="q-std-dlq")["QueueUrl"]
        policy = '{"deadLetterTargetArn":"%s","maxReceiveCount":3}' % self.arn(std)
        self.assertEqual(code_of(self.sqs.create_queue, QueueName="q-fifo-src.fifo",
                                 Attributes={"FifoQueue": "true", "RedrivePolicy": policy}), "InvalidParameterValue")

    # ---- retention (last: its message was sent in setUpClass) ----
    def test_zz_a_message_older_than_the_retention_period_is_gone(self):
        time.sleep(max(0.0, self.retention_sent + 62 - time.monotonic()))
        self.assertEqual(self.sqs.receive_message(QueueUrl=self.retention_url).get("Messages", []), [])
        attrs = self.sqs.get_queue_attributes(QueueUrl=self.retention_url,
                                              AttributeNames=["ApproximateNumberOfMessages"])["Attributes"]
        self.assertEqual(attrs["ApproximateNumberOfMessages"], "0")


if __name__ == "__main__":
    import warnings
    warnings.simplefilter("ignore", ResourceWarning)
    unittest.main(verbosity=2)
