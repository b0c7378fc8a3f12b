// The Prometheus text exposition of the runtimes' metrics (docs/METRICS.md):
// exact text for families, labels, escaping and histograms.
#include "spool/prometheus.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <limits>

#include "spool/error.hpp"
#include "spool/mq/consumer.hpp"
#include "spool/ops/queue.hpp"
#include "spool/ops/worker_pool.hpp"
#include "spool/outbox/relay.hpp"
#include "spool/outbox/store.hpp"

namespace spool::prometheus {
namespace {

using namespace std::chrono_literals;

TEST(prometheus_text, an_empty_writer_renders_nothing) { EXPECT_EQ(text_writer{}.str(), ""); }

TEST(prometheus_text, samples_of_one_family_stay_together_under_one_help_and_type) {
  text_writer w;
  w.counter("spool_x_total", "Xs.", {{"type", "a"}}, 1);
  w.gauge("spool_y", "Ys.", {}, 2);
  w.counter("spool_x_total", "ignored: the first help wins", {{"type", "b"}}, 3);
  EXPECT_EQ(w.str(),
            "# HELP spool_x_total Xs.\n"
            "# TYPE spool_x_total counter\n"
            "spool_x_total{type=\"a\"} 1\n"
            "spool_x_total{type=\"b\"} 3\n"
            "# HELP spool_y Ys.\n"
            "# TYPE spool_y gauge\n"
            "spool_y 2\n");
}

TEST(prometheus_text,
     label_values_escape_backslash_quote_and_newline_and_help_escapes_backslash_and_newline) {
  text_writer w;
  w.gauge("g", "a \\ b\nc \"q\"", {{"owner", "h\\1\"x\"\ny"}, {"table", "t"}}, 1);
  EXPECT_EQ(w.str(),
            "# HELP g a \\\\ b\\nc \"q\"\n"
            "# TYPE g gauge\n"
            "g{owner=\"h\\\\1\\\"x\\\"\\ny\",table=\"t\"} 1\n");
}

TEST(prometheus_text, values_are_integers_when_whole_and_shortest_exact_decimals_otherwise) {
  EXPECT_EQ(format_value(0), "0");
  EXPECT_EQ(format_value(-3), "-3");
  EXPECT_EQ(format_value(0.0025), "0.0025");
  EXPECT_EQ(format_value(1.5), "1.5");
  EXPECT_EQ(format_value(std::numeric_limits<double>::infinity()), "+Inf");
  EXPECT_EQ(format_value(-std::numeric_limits<double>::infinity()), "-Inf");
  EXPECT_EQ(format_value(std::nan("")), "NaN");
}

TEST(prometheus_text, a_histogram_renders_cumulative_buckets_ending_in_inf_then_sum_and_count) {
  latency_histogram h;
  h.observe(500us);  // le 0.001
  h.observe(1ms);    // le 0.001 (a bound belongs to its own bucket)
  h.observe(200ms);  // le 0.25
  h.observe(60s);    // +Inf only
  EXPECT_NEAR(h.sum_seconds, 60.2015, 1e-9);
  text_writer w;
  w.histogram("spool_h_seconds", "H.", {{"queue", "q"}}, h);
  EXPECT_EQ(w.str(),
            "# HELP spool_h_seconds H.\n"
            "# TYPE spool_h_seconds histogram\n"
            "spool_h_seconds_bucket{queue=\"q\",le=\"0.001\"} 2\n"
            "spool_h_seconds_bucket{queue=\"q\",le=\"0.0025\"} 2\n"
            "spool_h_seconds_bucket{queue=\"q\",le=\"0.005\"} 2\n"
            "spool_h_seconds_bucket{queue=\"q\",le=\"0.01\"} 2\n"
            "spool_h_seconds_bucket{queue=\"q\",le=\"0.025\"} 2\n"
            "spool_h_seconds_bucket{queue=\"q\",le=\"0.05\"} 2\n"
            "spool_h_seconds_bucket{queue=\"q\",le=\"0.1\"} 2\n"
            "spool_h_seconds_bucket{queue=\"q\",le=\"0.25\"} 3\n"
            "spool_h_seconds_bucket{queue=\"q\",le=\"0.5\"} 3\n"
            "spool_h_seconds_bucket{queue=\"q\",le=\"1\"} 3\n"
            "spool_h_seconds_bucket{queue=\"q\",le=\"2.5\"} 3\n"
            "spool_h_seconds_bucket{queue=\"q\",le=\"5\"} 3\n"
            "spool_h_seconds_bucket{queue=\"q\",le=\"10\"} 3\n"
            "spool_h_seconds_bucket{queue=\"q\",le=\"30\"} 3\n"
            "spool_h_seconds_bucket{queue=\"q\",le=\"+Inf\"} 4\n"
            "spool_h_seconds_sum{queue=\"q\"} " +
                format_value(h.sum_seconds) +
                "\n"
                "spool_h_seconds_count{queue=\"q\"} 4\n");
}

TEST(prometheus_text, invalid_names_a_reused_name_of_another_type_and_an_le_label_are_refused) {
  text_writer w;
  EXPECT_THROW(w.gauge("9lives", "", {}, 1), spool::error);
  EXPECT_THROW(w.gauge("a-b", "", {}, 1), spool::error);
  EXPECT_THROW(w.gauge("ok", "", {{"bad-label", "v"}}, 1), spool::error);
  EXPECT_THROW(w.gauge("ok", "", {{"__reserved", "v"}}, 1), spool::error);
  EXPECT_THROW(w.histogram("h", "", {{"le", "1"}}, {}), spool::error);
  w.counter("c_total", "", {}, 1);
  EXPECT_THROW(w.gauge("c_total", "", {}, 1), spool::error);
  EXPECT_EQ(w.str(), "# HELP c_total \n# TYPE c_total counter\nc_total 1\n");
}

TEST(prometheus_text, a_worker_pool_snapshot_renders_per_type_counters_histograms_and_pool_gauges) {
  ops::pool_metrics m;
  m.by_type["email"].claimed = 5;
  m.by_type["email"].succeeded = 4;
  m.by_type["email"].retried = 1;
  m.by_type["email"].handler_latency.observe(2ms);
  m.by_type[""].db_errors = 2;
  m.in_flight = 1;
  m.dequeues = 9;
  text_writer w;
  write(w, m, {{"owner", "o1"}});
  const std::string text = w.str();
  EXPECT_NE(text.find("spool_ops_claimed_total{owner=\"o1\",type=\"email\"} 5\n"), std::string::npos);
  EXPECT_NE(text.find("spool_ops_succeeded_total{owner=\"o1\",type=\"email\"} 4\n"), std::string::npos);
  EXPECT_NE(text.find("spool_ops_db_errors_total{owner=\"o1\",type=\"\"} 2\n"), std::string::npos);
  EXPECT_NE(text.find("spool_ops_handler_seconds_bucket{owner=\"o1\",type=\"email\",le=\"0.0025\"} 1\n"),
            std::string::npos);
  EXPECT_EQ(text.find("spool_ops_handler_seconds_count{owner=\"o1\",type=\"\"}"), std::string::npos);
  EXPECT_NE(text.find("spool_ops_in_flight{owner=\"o1\"} 1\n"), std::string::npos);
  EXPECT_NE(text.find("spool_ops_dequeues_total{owner=\"o1\"} 9\n"), std::string::npos);
}

TEST(prometheus_text, backlog_snapshots_render_one_gauge_per_state) {
  text_writer w;
  ops::queue_stats s{.pending = 3, .running = 1, .failed = 0, .done_24h = 7, .cancelled = 2};
  write(w, s, {{"table", "ops_queue"}});
  outbox::backlog_info b;
  b.pending = 4;
  b.oldest_pending_age = 1500ms;
  write(w, b, {{"table", "outbox_messages"}});
  mq::queue_metrics q;
  q.pending = 6;
  q.delayed = 1;
  write(w, q, {{"queue", "jobs"}});
  const std::string text = w.str();
  EXPECT_NE(text.find("spool_ops_table_ops{table=\"ops_queue\",status=\"pending\"} 3\n"), std::string::npos);
  EXPECT_NE(text.find("spool_ops_table_ops{table=\"ops_queue\",status=\"cancelled\"} 2\n"),
            std::string::npos);
  EXPECT_NE(text.find("spool_ops_table_done_24h{table=\"ops_queue\"} 7\n"), std::string::npos);
  EXPECT_NE(text.find("spool_outbox_backlog{table=\"outbox_messages\",state=\"pending\"} 4\n"),
            std::string::npos);
  EXPECT_NE(text.find("spool_outbox_oldest_pending_age_seconds{table=\"outbox_messages\"} 1.5\n"),
            std::string::npos);
  EXPECT_NE(text.find("spool_mq_queue_messages{queue=\"jobs\",state=\"pending\"} 6\n"), std::string::npos);
  EXPECT_NE(text.find("spool_mq_queue_messages{queue=\"jobs\",state=\"delayed\"} 1\n"), std::string::npos);
}

TEST(prometheus_text, relay_and_consumer_snapshots_use_the_documented_names) {
  outbox::relay_metrics r;
  r.delivered = 3;
  r.breaker = outbox::breaker_state::half_open;
  mq::consumer_metrics c;
  c.quarantined = 2;
  c.failed = 1;
  text_writer w;
  write(w, r, {{"owner", "o"}, {"table", "outbox_messages"}});
  write(w, c, {{"queue", "jobs"}});
  const std::string text = w.str();
  EXPECT_NE(text.find("spool_outbox_delivered_total{owner=\"o\",table=\"outbox_messages\"} 3\n"),
            std::string::npos);
  EXPECT_NE(text.find("spool_outbox_breaker_state{owner=\"o\",table=\"outbox_messages\"} 2\n"),
            std::string::npos);
  EXPECT_NE(text.find("# TYPE spool_outbox_sink_seconds histogram\n"), std::string::npos);
  EXPECT_NE(text.find("spool_mq_quarantined_total{queue=\"jobs\"} 2\n"), std::string::npos);
  EXPECT_NE(text.find("spool_mq_failed_total{queue=\"jobs\"} 1\n"), std::string::npos);
  EXPECT_NE(text.find("spool_mq_handler_seconds_count{queue=\"jobs\"} 0\n"), std::string::npos);
}

}  // namespace
}  // namespace spool::prometheus
